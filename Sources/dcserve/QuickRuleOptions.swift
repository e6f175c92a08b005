import ArgumentParser
import DCServe
import DictionaryTransport

/// Quick mode's dictionary-rule flags (`--dictionaries`, `--history-dictionaries`,
/// `--dictionary-lifetime`, `--partition-header`), shared by `serve` and `estimate` so both build
/// exactly the same rules from the same command line. A value type parsed by ArgumentParser.
struct QuickRuleOptions: ParsableArguments {
    @Option(name: .customLong("dictionaries"), help: ArgumentHelp(
        "Quick mode: a URL path pattern whose responses become dictionaries (repeatable).", valueName: "pattern"))
    var dictionaryPatterns: [String] = []

    @Option(name: .customLong("history-dictionaries"), help: ArgumentHelp(
        "Quick mode: a URL path pattern with one :group segment (e.g. /api/chats/:chat/*); per group value a dictionary is built from recent responses and offered with Link (repeatable; defaults: \(Self.historyDefaults)).", valueName: "pattern"))
    var historyPatterns: [String] = []

    /// The history defaults as `--help` states them, from the settings themselves (so they cannot drift).
    static var historyDefaults: String {
        let d = HistoryDictionarySettings()
        return "dictionary ≤ \(d.maxDictionaryBytes >> 10) KiB from a \(d.windowBytes >> 10) KiB window, first built after "
            + "\(d.firstBuildBytes >> 10) KiB of responses, rebuilt after \(d.rebuildBytes >> 10) KiB new content or "
            + "\(d.rebuildSeconds / 60) min, each usable \(d.lifetimeSeconds / 3600) h, \(d.keep) kept per group"
    }

    @Option(name: .customLong("dictionary-lifetime"), help: ArgumentHelp(
        "Quick mode: the Cache-Control of responses the --dictionaries rules mark as dictionaries: auto (the default: max-age of a day for files; with --upstream the API's own value, and a response it marks no-cache or no-store is not made a dictionary), maxAge, upstream, or a Cache-Control value such as 'max-age=0, stale-while-revalidate=86400' (then browsers may show a response up to a day old while they revalidate it).",
        valueName: "value"))
    var dictionaryLifetime: String?

    @Option(name: .customLong("partition-header"), help: ArgumentHelp(
        "Quick mode: every --dictionaries and --history-dictionaries rule becomes private, partitioned by this request header (e.g. Authorization); requests without it share one anonymous partition.", valueName: "name"))
    var partitionHeader: String?

    /// True when no rule flag was given.
    var isEmpty: Bool { dictionaryPatterns.isEmpty && historyPatterns.isEmpty }

    /// Appends the rules these flags describe to `c.rules` (`quick1…`, `history1…`). Throws a
    /// `CLIError` naming the flag for an invalid pattern or a flag that has no rule to apply to.
    func apply(to c: inout DCServeConfiguration) throws {
        for (i, pattern) in dictionaryPatterns.enumerated() {
            do {
                try URLPattern.validateServed(pattern)
            } catch {
                throw CLIError("--dictionaries \(pattern): \(error)")
            }
            var rule = DictionaryRule(name: "quick\(i + 1)", match: pattern)
            if let partitionHeader { rule.partition = .header(partitionHeader) }
            if let dictionaryLifetime { rule.lifetime = DictionaryLifetime(configured: dictionaryLifetime) }
            c.rules.append(rule)
        }
        for (i, pattern) in historyPatterns.enumerated() {
            do {
                try URLPattern.validateServed(pattern)
            } catch {
                throw CLIError("--history-dictionaries \(pattern): \(error)")
            }
            var rule = DictionaryRule(name: "history\(i + 1)", match: pattern)
            rule.history = HistoryDictionarySettings()
            if let partitionHeader { rule.partition = .header(partitionHeader) }
            c.rules.append(rule)
        }
        if dictionaryLifetime != nil && dictionaryPatterns.isEmpty {
            throw CLIError("--dictionary-lifetime applies to --dictionaries rules: give at least one")
        }
        if partitionHeader != nil && isEmpty {
            throw CLIError("--partition-header applies to --dictionaries and --history-dictionaries rules: give at least one of them")
        }
    }

    /// `error` under the rule flag that produced its key, or nil when no rule flag did.
    /// `fromFile`: a configuration file was given (its own history rules keep their key names).
    func describe(_ error: ConfigurationError, fromFile: Bool) -> String? {
        if error.key.hasPrefix("dictionaries.history"), !fromFile || !historyPatterns.isEmpty,
           let n = Int(error.key.dropFirst("dictionaries.history".count).prefix { $0.isNumber }), n >= 1, n <= historyPatterns.count {
            return "--history-dictionaries \(historyPatterns[n - 1]): \(error.reason) (\(error.key))"
        }
        if error.key.hasPrefix("dictionaries.quick"), error.key.hasSuffix(".lifetime"), dictionaryLifetime != nil {
            return "--dictionary-lifetime: \(error.reason) (\(error.key))"
        }
        return nil
    }
}

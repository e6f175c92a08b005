import ArgumentParser
import DictionaryCodec
import DictionaryStoreSQLite
import DictionaryTransport
import Foundation
import Logging

/// `dcserve train`: builds a raw RFC 9842 dictionary from sample responses, reports how much it saves
/// on held-out samples, writes it atomically, optionally stores it in a dictionary store, and prints
/// the configuration and `Link` header that advertise it.
struct TrainCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "train",
        abstract: "Train a compression dictionary from sample responses and report its savings.",
        discussion: """
            Samples come from --samples (a directory, recursive, filtered by --include/--exclude globs), \
            --urls (a file of http:// or https:// URLs fetched from a running origin) and/or --store with --rule \
            (responses a dcserve store kept for that rule). Samples over 32 MiB are truncated; for \
            training, samples over 128 KiB are split into 128 KiB pieces; samples under 32 bytes are \
            skipped. At least 10 usable samples are needed.

            The samples are split by --seed into training (72 %), validation (8 %, chooses between \
            candidate dictionaries) and held-out (20 %, the report). The chosen method is then built \
            again from training and validation samples together. The dictionary is raw content \
            (no zstd header) and the same inputs and seed always give the same bytes.
            """
    )

    @Option(name: .long, help: "Directory of sample responses (searched recursively).")
    var samples: String?

    @Option(name: .long, help: "File listing http:// or https:// URLs (one per line) to fetch as samples.")
    var urls: String?

    @Option(name: .long, help: "Dictionary store directory: read samples of --rule from it, and store the result in it.")
    var store: String?

    @Option(name: .long, help: "With --store: use the responses the store holds for this configuration rule as samples.")
    var rule: String?

    @Option(name: .long, help: "Only sample files matching this glob (repeatable; no '/' = file name, else relative path).")
    var include: [String] = []

    @Option(name: .long, help: "Skip sample files matching this glob (repeatable).")
    var exclude: [String] = []

    @Option(name: .long, help: "Dictionary size: bytes, or with K/M suffix (64K, 128K, 256K). Default 100K.")
    var size: String = "100K"

    @Option(name: .long, help: "Where to write the dictionary: a regular file is replaced atomically, a device or FIFO is written through, - is standard output.")
    var output: String

    @Option(name: .long, help: "Use-As-Dictionary match pattern for the configuration snippet and store (e.g. /news/*).")
    var match: String?

    @Option(name: .customLong("match-dest"), help: "Use-As-Dictionary match-dest (repeatable, e.g. document).")
    var matchDest: [String] = []

    @Option(name: .long, help: "Use-As-Dictionary id.")
    var id: String?

    @Option(name: .long, help: "Name of the dictionary in the configuration snippet (default: output file name).")
    var name: String?

    @Option(name: .long, help: "Seed of the training/held-out split.")
    var seed: UInt64 = 0

    @Option(name: .customLong("held-out"), help: "Fraction of samples held out for the report (0 <= f < 1; 0: no report, e.g. when you hold pages out yourself).")
    var heldOut: Double = 0.2

    @Option(name: .long, help: "Training effort: fast, default or max.")
    var effort: String = "default"

    @Option(name: .long, help: "Progress on stderr: auto (bar on a terminal, lines otherwise), bar, lines or none.")
    var progress: String = "auto"

    @Flag(name: .long, help: "Print the report as JSON.")
    var json = false

    func run() throws {
        let targetSize = try Self.parseSize(size)
        guard let effortLevel = TrainingEffort(rawValue: effort) else {
            throw ValidationError("--effort must be fast, default or max")
        }
        guard let progressStyle = TrainProgressReporter.Style(rawValue: progress) else {
            throw ValidationError("--progress must be auto, bar, lines or none")
        }
        guard samples != nil || urls != nil || rule != nil else {
            throw ValidationError("give samples with --samples DIR, --urls FILE or --store DIR --rule NAME")
        }
        if rule != nil && store == nil { throw ValidationError("--rule needs --store DIR") }
        let description = try storeDescription()
        try CLIOutputFile.checkWritable(output)
        // Open the output store before training so a bad store fails in seconds, not after the run.
        var outputStore: SQLiteDictionaryStore?
        if let store, description != nil {
            do { outputStore = try SQLiteDictionaryStore(directory: store, logger: Self.quietLogger) } catch {
                throw CLIError("\(store): cannot open the dictionary store (\(error))")
            }
        }

        // 1. Samples.
        var all: [TrainingSample] = []
        var truncated: [String] = []
        if let samples {
            let read = try SampleDirectory(root: samples, include: include, exclude: exclude).read()
            if read.samples.isEmpty {
                throw CLIError("\(samples): no sample files" + (include.isEmpty && exclude.isEmpty ? "" : " matching the --include/--exclude globs"))
            }
            all += read.samples
            truncated += read.truncated
        }
        if let urls { all += try HTTPSampleFetcher().fetchAll(listFile: urls) }
        if let rule, let store { all += try Self.storeSamples(directory: store, rule: rule) }
        if all.isEmpty { throw CLIError(TrainingError.noSamples.description) }

        // 2. Train and evaluate, with progress.
        var options = DictionaryTrainingOptions()
        options.targetSize = targetSize
        options.seed = seed
        options.heldOutFraction = heldOut
        options.effort = effortLevel
        let tracker = TrainingProgress()
        let reporter = TrainProgressReporter(progress: tracker, style: progressStyle)
        let heldOutEstimateMB = Double(all.reduce(0) { $0 + $1.bytes.count }) * heldOut / 1_048_576
        // Planned first so the bar's fraction and estimate include it from the start.
        tracker.plan("evaluate", estimatedSeconds: 0.1 + heldOutEstimateMB * 1.6)
        reporter.start()
        let started = Date()
        let result: TrainingResult
        let evaluation: DictionaryEvaluation
        let trainingSeconds: Double
        do {
            defer { reporter.stop() }
            do {
                result = try DictionaryTrainer.train(samples: all, options: options, progress: tracker)
            } catch let error as TrainingError {
                throw CLIError(error.description)
            }
            trainingSeconds = Date().timeIntervalSince(started)
            tracker.begin("evaluate")
            evaluation = try DictionaryEvaluation.evaluate(
                dictionary: result.dictionary, samples: result.split.heldOut.map(\.bytes), progress: tracker)
            tracker.finish()
        }
        let evaluationSeconds = Date().timeIntervalSince(started) - trainingSeconds

        // 3. Output: file, then store.
        try CLIOutputFile.write(result.dictionary, to: output)
        let hash = SHA256.hash(result.dictionary)
        var storedAt: String?
        if let store, let description, let directoryStore = outputStore {
            do {
                try directoryStore.put(result.dictionary, description: description, now: Date())
                try directoryStore.flush()
                storedAt = store + "/" + SQLiteDictionaryStore.fileName + " (" + hash.hex + ")"
            } catch {
                throw CLIError("\(store): cannot store the dictionary (\(error))")
            }
        }

        let report = TrainReport(
            output: output, hash: hash, result: result, evaluation: evaluation, truncated: truncated,
            trainingSeconds: trainingSeconds, evaluationSeconds: evaluationSeconds, storedAt: storedAt,
            name: name ?? Self.defaultName(output), match: match, matchDest: matchDest, id: id, seed: seed,
            effort: effortLevel)
        let text = json ? try report.json() : report.text()
        // With `-o -` the dictionary is on standard output: the report goes to standard error.
        if output == "-" {
            FileHandle.standardError.write(Data((text + "\n").utf8))
        } else {
            print(text)
        }
    }

    /// The store record for the result when --store is given (needs --match, validated up front so a
    /// bad pattern fails before hours of training).
    private func storeDescription() throws -> DictionaryDescription? {
        guard store != nil else { return nil }
        guard let match else {
            if rule != nil { return nil }  // the store is only a sample source
            throw ValidationError("--store needs --match to record the dictionary (e.g. --match '/news/*')")
        }
        let pattern: URLPattern
        do { pattern = try URLPattern(match, base: nil) } catch {
            throw ValidationError("--match \(match): \(error)")
        }
        var dictionaryID: DictionaryID?
        if let id {
            guard let parsed = DictionaryID(id) else { throw ValidationError("--id must be at most 1024 printable ASCII characters") }
            dictionaryID = parsed
        }
        return DictionaryDescription(
            pattern: pattern, matchDestinations: matchDest, id: dictionaryID, rule: name ?? Self.defaultName(output),
            sourcePath: "/dictionaries/\(name ?? Self.defaultName(output)).dict", maxAge: 86400)
    }

    /// The store logs at info level by default; the CLI prints its own summary.
    static var quietLogger: Logger {
        var logger = Logger(label: "dcserve.train.store")
        logger.logLevel = .warning
        return logger
    }

    static func storeSamples(directory: String, rule: String) throws -> [TrainingSample] {
        guard FileManager.default.fileExists(atPath: directory) else { throw CLIError("\(directory): no such store directory") }
        // The store serve keeps (a directory store found there is imported first). Shared responses
        // only: one user's responses are never training material.
        let store: SQLiteDictionaryStore
        do { store = try SQLiteDictionaryStore(directory: directory, logger: quietLogger) } catch {
            throw CLIError("\(directory): cannot open the store (\(error))")
        }
        var out: [TrainingSample] = []
        for record in store.records.sorted(by: { $0.hash < $1.hash }) where record.partition == nil && record.rule == rule {
            guard let hash = DictionaryHash(hex: Substring(record.hash)), let stored = store.get(hash) else { continue }
            out.append(TrainingSample(name: record.sourcePath.map { "\($0)#\(hash.hex)" } ?? hash.hex, bytes: stored.bytes,
                                      modified: record.firstServed))
        }
        if out.isEmpty { throw CLIError("\(directory): the store holds no responses for rule \"\(rule)\"") }
        return out
    }

    /// Parses `100000`, `64K`, `128k`, `1M` (K = 1024).
    static func parseSize(_ text: String) throws -> Int {
        let trimmed = text.trimmingCharacters(in: .whitespaces).uppercased()
        var multiplier = 1
        var digits = Substring(trimmed)
        if trimmed.hasSuffix("K") || trimmed.hasSuffix("KB") || trimmed.hasSuffix("KIB") {
            multiplier = 1024; digits = digits.prefix { $0.isNumber }
        } else if trimmed.hasSuffix("M") || trimmed.hasSuffix("MB") || trimmed.hasSuffix("MIB") {
            multiplier = 1 << 20; digits = digits.prefix { $0.isNumber }
        }
        guard let value = Int(digits), value > 0, value.multipliedReportingOverflow(by: multiplier).overflow == false else {
            throw ValidationError("--size \(text): expected bytes or a K/M size such as 64K, 128K, 256K")
        }
        let size = value * multiplier
        guard DictionaryTrainingOptions.sizeRange.contains(size) else {
            throw ValidationError("--size \(text): \(TrainingError.targetSizeOutOfRange(size, allowed: DictionaryTrainingOptions.sizeRange))")
        }
        return size
    }

    static func defaultName(_ output: String) -> String {
        let base = (output as NSString).lastPathComponent
        let stem = (base as NSString).deletingPathExtension
        return stem.isEmpty || output == "-" ? "trained" : stem
    }
}

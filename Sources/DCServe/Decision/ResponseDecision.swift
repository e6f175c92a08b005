import DictionaryCodec
import DictionaryTransport
import HTTPServer

/// What the compression middleware decided for one response, and why: the single typed value every
/// path through it ends in (negotiated, passed through, refused), with the sizes known at response
/// time. Recorded per response (never stored in a shared cache entry): in the access log
/// (``logNote``), in metrics and the live view (``CompressionObserver/responded(_:)``), and, when
/// `server.decisionHeader` is on, in the `DCServe-Decision` field (``fieldValue``). A value type.
public struct ResponseDecision: Hashable, Sendable {
    public enum Outcome: Hashable, Sendable {
        /// Sent as `coding` (dcb or dcz) against the dictionary `hash`.
        case delta(ContentCoding, DictionaryHash)
        /// Sent with the `Content-Encoding` `coding` ("identity" when none; an upstream's own coding
        /// when it passed through), without a dictionary, for `reason`.
        case plain(String, DecisionReason)
        /// Nothing the client accepts could be produced: 406.
        case notAcceptable

        /// Whether the body is a dictionary coding (dcb or dcz).
        public var isDelta: Bool { if case .delta = self { true } else { false } }
    }

    public var outcome: Outcome
    /// The dictionary rule that covers the path (advertises it, or may compress it); nil when none.
    public var rule: String?
    /// Identity body size, when the body was known.
    public var identityBytes: Int?
    /// What the client's best coding without dictionaries weighs (for a delta: the cached plain
    /// variant, nil until one is encoded; for a plain response: what was sent).
    public var bestPlainBytes: Int?
    /// The coding of `bestPlainBytes` ("identity" when that was best).
    public var bestPlainCoding: String?
    /// Body bytes of the 200 response the decision produced (before a 304 replaced it); nil when streamed.
    public var sentBytes: Int?

    public init(_ outcome: Outcome, rule: String? = nil, identityBytes: Int? = nil, bestPlainBytes: Int? = nil,
                bestPlainCoding: String? = nil, sentBytes: Int? = nil) {
        self.outcome = outcome
        self.rule = rule
        self.identityBytes = identityBytes
        self.bestPlainBytes = bestPlainBytes
        self.bestPlainCoding = bestPlainCoding
        self.sentBytes = sentBytes
    }

    /// The response field's name.
    public static let fieldName = "DCServe-Decision"

    /// `delta`, `plain` or `not-acceptable` (the metrics' `decision` label).
    public var kind: String {
        switch outcome {
        case .delta: "delta"
        case .plain: "plain"
        case .notAcceptable: "not-acceptable"
        }
    }

    /// The precise reason label: `hit` for a delta, the ``DecisionReason`` otherwise (metrics, log).
    public var reasonLabel: String {
        switch outcome {
        case .delta: "hit"
        case .plain(_, let reason): reason.rawValue
        case .notAcceptable: "not-acceptable"
        }
    }

    /// The coding sent (`Content-Encoding`, "identity" when none; "-" for a 406).
    public var coding: String {
        switch outcome {
        case .delta(let c, _): c.rawValue
        case .plain(let c, _): c
        case .notAcceptable: "-"
        }
    }

    /// The first 16 hex digits of the dictionary's hash (delta only).
    public var dictionaryPrefix: String? {
        if case .delta(_, let hash) = outcome { return hash.hexPrefix(16) }
        return nil
    }

    /// Percent saved by the delta against the best plain coding dcserve would have sent (identity
    /// only when that is the client's best), rounded down; nil when not a delta or that size is unknown.
    public var savedPercent: (percent: Int, versus: String)? {
        guard case .delta = outcome, let sent = sentBytes, let base = bestPlainBytes, let versus = bestPlainCoding,
              base > 0 else { return nil }
        return (max(0, (base - min(sent, base)) * 100 / base), versus)
    }

    /// The `DCServe-Decision` value: `delta=dcz dict=<hash16> saved=93% vs=br rule=assets`,
    /// `plain=br reason=unknown-dictionary rule=assets`, `not-acceptable reason=not-acceptable`.
    /// A partition mismatch reads as `unknown-dictionary` (see ``DecisionReason/clientLabel``).
    public var fieldValue: String {
        var s: String
        switch outcome {
        case .delta(let coding, _):
            s = "delta=\(coding.rawValue) dict=\(dictionaryPrefix ?? "")"
            if let saved = savedPercent { s += " saved=\(saved.percent)% vs=\(saved.versus)" }
        case .plain(let coding, let reason):
            s = "plain=\(coding) reason=\(reason.clientLabel)"
        case .notAcceptable:
            s = "not-acceptable reason=not-acceptable"
        }
        if let rule { s += " rule=\(rule)" }
        return s
    }

    /// The access-log note: `decision=dcz@0123456789abcdef rule=assets`, `decision=br:unknown-dictionary`,
    /// `decision=406` (precise reasons: this is the operator's log).
    public var logNote: String {
        var s = ""
        appendLogNote(to: &s)
        return s
    }

    /// Appends ``logNote`` to `line` piece by piece (the hash as two 8-digit halves: no heap string).
    func appendLogNote(to line: inout String) {
        line += "decision="
        switch outcome {
        case .delta(let coding, let hash):
            line += coding.rawValue; line += "@"; line += hash.hex(digits: 0..<8); line += hash.hex(digits: 8..<16)
        case .plain(let coding, let reason): line += coding; line += ":"; line += reason.rawValue
        case .notAcceptable: line += "406"
        }
        if let rule { line += " rule="; line += rule }
    }
}

/// The access-log note of a response: formatted only when the access log writes the line.
struct DecisionLogNote: AccessLogNote {
    let decision: ResponseDecision
    var description: String { decision.logNote }
    func append(to line: inout String) { decision.appendLogNote(to: &line) }
}

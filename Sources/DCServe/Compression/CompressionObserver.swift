import DictionaryCodec
import DictionaryTransport

/// What the compression middleware reports as it works (metrics, tests). Implementations must be
/// thread-safe and cheap: every method is called on the request path.
public protocol CompressionObserver: Sendable {
    /// The negotiation outcome for one response.
    func decided(_ decision: EncodingDecision, path: Substring)
    /// A variant-cache lookup.
    func variantCache(hit: Bool)
    /// One encode finished (request path or background).
    func encoded(coding: ContentCoding, level: Int, duration: Duration)
    /// A dictionary was stored for the first time by this process.
    func storedDictionary(_ hash: DictionaryHash, bytes: Int)
    /// One event of a live rule: a response, a dictionary hit, or a refused version.
    func live(rule: String, _ event: LiveEvent)
    /// Sizes for one compressible response: its identity body, what the best non-dictionary coding
    /// the client accepts would have sent, and what was sent; `rule`: the rule covering the path.
    /// For a delta whose plain alternative is not cached yet this comes later, off the request path.
    func sizes(rule: String?, identity: Int, bestPlain: Int, sent: Int)
    /// Every response the middleware answered (memo hits and pass-throughs included), with its decision.
    func responded(_ record: ResponseRecord)
    /// Whether ``responded(_:)`` does anything (false: no record is built per response).
    var wantsResponses: Bool { get }
}

/// Reports nothing.
public struct NoCompressionObserver: CompressionObserver {
    public init() {}
    public func decided(_ decision: EncodingDecision, path: Substring) {}
    public func variantCache(hit: Bool) {}
    public func encoded(coding: ContentCoding, level: Int, duration: Duration) {}
    public func storedDictionary(_ hash: DictionaryHash, bytes: Int) {}
    public func sizes(rule: String?, identity: Int, bestPlain: Int, sent: Int) {}
}

extension CompressionObserver {
    public func live(rule: String, _ event: LiveEvent) {}
    public func responded(_ record: ResponseRecord) {}
    public var wantsResponses: Bool { true }
}

extension NoCompressionObserver {
    public var wantsResponses: Bool { false }
}

/// Reports to each of `observers` in order (metrics and the live view). Thread-safe if they are.
public struct CompressionObservers: CompressionObserver {
    public let observers: [any CompressionObserver]
    public init(_ observers: [any CompressionObserver]) { self.observers = observers }
    public func decided(_ decision: EncodingDecision, path: Substring) { for o in observers { o.decided(decision, path: path) } }
    public func variantCache(hit: Bool) { for o in observers { o.variantCache(hit: hit) } }
    public func encoded(coding: ContentCoding, level: Int, duration: Duration) {
        for o in observers { o.encoded(coding: coding, level: level, duration: duration) }
    }
    public func storedDictionary(_ hash: DictionaryHash, bytes: Int) { for o in observers { o.storedDictionary(hash, bytes: bytes) } }
    public func live(rule: String, _ event: LiveEvent) { for o in observers { o.live(rule: rule, event) } }
    public func sizes(rule: String?, identity: Int, bestPlain: Int, sent: Int) {
        for o in observers { o.sizes(rule: rule, identity: identity, bestPlain: bestPlain, sent: sent) }
    }
    public func responded(_ record: ResponseRecord) { for o in observers { o.responded(record) } }
    public var wantsResponses: Bool { observers.contains { $0.wantsResponses } }
}

/// What happened on a live rule's path.
public enum LiveEvent: String, Sendable {
    /// A 200 response advertised as a live version.
    case response
    /// A response coded against one of the partition's retained versions.
    case dictionaryHit
    /// The client named a version of another partition (answered as if unknown).
    case partitionMismatch
    /// The client named a version of its partition that is past the retention (answered as if unknown).
    case pastRetention
    /// A new version not advertised: the store's budget or the live index's memory is full of versions
    /// still within their lifetime (``LiveVersionIndex/offer``).
    case overBudget
}

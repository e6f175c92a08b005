import DictionaryCodec
import DictionaryTransport
import Foundation
import HTTPServer
import HTTPTypes
import Logging
import Locking

/// The dictionary-compression step: one middleware around any handler (static files, a proxy).
///
/// For GET/HEAD responses with status 200 it
/// 1. marks responses whose path matches a rule's `resources` as dictionaries (`Use-As-Dictionary`,
///    a fresh `Cache-Control`) and stores their bytes in the dictionary store, by SHA-256;
/// 2. negotiates the coding (``Negotiation/decide``: Accept-Encoding, Available-Dictionary, the §9.3.3
///    gate, privacy, eligibility) and sends a cached variant or encodes one at the fast level, queueing
///    a best-level encode in the background;
/// 3. sets `Content-Encoding`, `Vary`, a distinct ETag per variant, and answers `If-None-Match` /
///    `If-Modified-Since` itself against the chosen variant (the inner handler never sees them, so a
///    304 always refers to the representation the client would get).
/// Range requests pass through as identity (only `Vary` is added). Streamed 200 bodies (proxied
/// responses too large to buffer) are compressed on the fly at the fast level with a plain coding
/// (``StreamingEncodedBody``). Other methods and statuses, and responses with
/// `Cache-Control: no-transform`, pass through untouched. Encoding
/// errors fall back to identity (never a 500).
///
/// Shortcuts that trust the ETag — the ``ResponseMemo`` and the ``ResourceCache`` (keyed by path and
/// ETag, without authority or user) — apply only to responses whose handler set
/// `isContentAddressed` (static files). Proxied and per-user responses are hashed and negotiated on
/// every request, so two users who get the same head never get each other's bytes.
///
/// Finished content-addressed responses are remembered in a ``ResponseMemo`` (see there for when an
/// entry answers): a repeated request for an unchanged resource replays the recorded
/// ``ResponseEffects`` (metrics, store bookkeeping) and gets the same head and body the full
/// computation would give.
///
/// This file holds the type's state and the order of the steps (`handle`, `answer`, `process`); each
/// step is an extension in a file named after it: `Partition/ResolvePartition.swift`,
/// `Compression/Triage.swift`, `Variants/ReadIdentity.swift`, `Compression/Advertise.swift`,
/// `Live/AdvertiseLive.swift`, `Compression/Negotiate.swift` (with `FindDictionary.swift`),
/// `Variants/EncodeVariant.swift`, `Streaming/StreamingEncode.swift`, `Compression/AddVary.swift`,
/// `Compression/IdentityForRange.swift`, `Compression/PrivateCacheControl.swift`,
/// `Decision/ReportDecision.swift`; the memo is `Memo/ResponseMemo.swift`.
///
/// Thread-safety: immutable configuration plus thread-safe caches; `handle` may run on any event
/// loop concurrently, and responds from one of its own threads (`compressionThreads`, or the library's
/// store-read threads) for large bodies the memo does not answer.
public final class DictionaryCompressionMiddleware: HTTPMiddleware {
    /// The request fields the §9.3.3 cross-origin gate reads; dcb/dcz variants vary on them.
    static let gateFieldNames = ["Sec-Fetch-Site", "Sec-Fetch-Mode", "Origin"]

    /// Bodies larger than this are passed through as they are (not read into memory).
    public static let maximumBodyBytes = 64 << 20
    /// Bodies at least this large are processed off the event loop unless the memo answers them.
    static let offLoopBodyBytes = 64 << 10

    let rules: DictionaryRuleSet
    let settings: DCServeConfiguration.Compression
    let store: any DictionaryStore
    let library: DictionaryLibrary
    let variants: VariantCache
    let resources: ResourceCache
    let background: BackgroundEncoder<VariantKey>
    let observer: any CompressionObserver
    let logger: Logger
    /// Hashes stored by this process: later serves only update `lastServed` (no disk write). At most
    /// ``maxStoredThisRun``: emptied when full (a forgotten hash is stored again, the same bytes), so
    /// a stream of new versions does not grow it for the process's lifetime.
    let storedThisRun = Locked(Set<DictionaryHash>())
    static let maxStoredThisRun = 1 << 16
    /// `Available-Dictionary` values parsed once each (clients send the same few values again and again).
    let availableDictionaries = BoundedMemo<String, AvailableDictionary.Parsed>()
    /// `Use-As-Dictionary` values serialised once per (rule, path).
    let advertisements = BoundedMemo<String, String?>()
    /// Finished responses for repeated requests.
    let memo: ResponseMemo
    /// One on-the-fly encode per variant, and one read of each content-addressed resource version, at
    /// a time (identical concurrent requests share them); large ones capped at the core count.
    let encodes = SingleFlight<VariantKey, CachedVariant>(maxConcurrentLarge: ProcessInfo.processInfo.activeProcessorCount)
    let reads = SingleFlight<String, ResourceCache.Entry>(maxConcurrentLarge: ProcessInfo.processInfo.activeProcessorCount)
    /// Where large-body work (bodies of `offLoopBodyBytes` or more) and the off-request plain-size
    /// encodes run: threads of the middleware's own, never Dispatch's shared pool, because that work may
    /// wait inside ``SingleFlight`` (a follower for its leader, a large job for a slot), and on Linux
    /// Dispatch adds about one thread per second while its threads wait, holding up every other
    /// client's large response meanwhile. At most `compressionRunning` items compute at once (CPU
    /// bound, FIFO beyond); an item waiting in SingleFlight does not count, so the next one in line
    /// starts (up to `compressionThreadLimit` threads; beyond that work waits its turn).
    let compressionThreads = BlockingWorkThreads(name: "dcserve.compress", maxThreads: compressionThreadLimit,
                                                 maxRunning: compressionRunning)
    /// Threads at most for `compressionThreads`: a burst of identical or large requests waits on this
    /// many (each costs a thread's stack, not a copy of its body); later large-body work queues.
    static let compressionThreadLimit = 64
    /// Large-body items computing at once: one more than the large-encode cap (the core count), so
    /// while every large slot is taken the next items in line still reach SingleFlight (to wait there
    /// without counting, or to run when they are not large) instead of queueing behind the slot holders.
    static let compressionRunning = ProcessInfo.processInfo.activeProcessorCount + 1
    /// Versions of live responses clients may name, by (partition, hash).
    let live: LiveVersionIndex
    /// Key of partition ids (``PartitionID``); empty when no rule is private.
    let partitionSecret: [UInt8]
    /// History dictionaries, looked up by (partition, hash, path) before anything else.
    let history: HistoryDictionaries?
    /// Writes live versions to the store off the request path, many per transaction.
    let liveWrites: LiveStoreWriter
    /// The plain sizes live responses would have had, estimated from a sample.
    let livePlainSizes = LivePlainSizeEstimate()
    /// The log line (at most one a minute) about live versions refused over budget.
    let overBudget: LiveBudgetWarning
    /// Add `DCServe-Decision` to every response (`server.decisionHeader`).
    let decisionHeader: Bool
    /// Note the decision for the access log on every response (`server.accessLog`).
    let accessLogNotes: Bool
    /// Whether the observer wants a record of every response (decided once).
    let observesResponses: Bool
    /// Whether anything reads a response's decision (observer, access-log note, `DCServe-Decision`):
    /// when nothing does, a passed response's decision is not worked out.
    let reportsDecisions: Bool
    /// Whether the caches in front honour `Vary` (`server.sharedCaches`).
    let sharedCaches: SharedCaches
    /// Whether store writes currently succeed: nothing new is advertised while they fail.
    let storeHealth: StoreWriteHealth
    static let decisionFieldName = HTTPField.Name(ResponseDecision.fieldName)!

    public init(rules: DictionaryRuleSet, settings: DCServeConfiguration.Compression, store: any DictionaryStore,
                library: DictionaryLibrary, variants: VariantCache, resources: ResourceCache,
                background: BackgroundEncoder<VariantKey>, observer: any CompressionObserver = NoCompressionObserver(),
                logger: Logger, memoBytes: Int = MemoryBudget()[.responseMemo], live: LiveVersionIndex? = nil, partitionSecret: [UInt8] = [], decisionHeader: Bool = false,
                history: HistoryDictionaries? = nil, sharedCaches: SharedCaches = .ignoreVary,
                storeHealth: StoreWriteHealth = StoreWriteHealth(), accessLogNotes: Bool = true) {
        self.decisionHeader = decisionHeader
        self.accessLogNotes = accessLogNotes
        self.observesResponses = observer.wantsResponses
        self.reportsDecisions = decisionHeader || accessLogNotes || observer.wantsResponses
        self.sharedCaches = sharedCaches
        self.storeHealth = storeHealth
        self.history = history
        self.live = live ?? LiveVersionIndex(limits: Dictionary(
            rules.rules.filter(\.isLive).map { ($0.name, $0.upstreamVersions) }, uniquingKeysWith: { a, _ in a }))
        self.partitionSecret = partitionSecret
        self.rules = rules
        self.settings = settings
        self.store = store
        self.library = library
        self.variants = variants
        self.resources = resources
        self.background = background
        self.observer = observer
        self.logger = logger
        memo = ResponseMemo(byteBudget: memoBytes)
        overBudget = LiveBudgetWarning(logger: logger)
        liveWrites = LiveStoreWriter(store: store, onCommitted: { [observer, storeHealth, logger] writes in
            for write in writes { observer.storedDictionary(write.hash, bytes: write.bytes.count) }
            storeHealth.succeeded(logger: logger)
        }, onFailed: { [storeHealth, logger] writes, error in
            storeHealth.failed("\(error)", logger: logger,
                               message: "cannot store live dictionary versions (later requests naming them get a plain coding)",
                               metadata: ["versions": "\(writes.count)", "path": "\(writes.first?.description.sourcePath ?? "")"])
        })
    }

    public func handle(_ request: HTTPServerRequest, next: any HTTPHandler,
                       respond: @escaping @Sendable (consuming HTTPServerResponse) -> Void) {
        let method = request.method
        guard method == .get || method == .head else {
            // Still strip a private rule's upstream partition header (and mark the response private).
            return next.handle(request) { (out: consuming HTTPServerResponse) in
                _ = self.partitioned(request, &out)
                let decision = self.passedDecision(request, out, .method)
                self.finish(request, &out, decision)
                respond(out)
            }
        }
        if request.head.headerFields[.range] != nil {
            next.handle(request) { (out: consuming HTTPServerResponse) in
                _ = self.partitioned(request, &out)
                out = self.identityForRange(request, out)
                let decision = self.passedDecision(request, out, .range)
                self.finish(request, &out, decision)
                respond(out)
            }
            return
        }
        let conditions = ConditionalRequest(request.head.headerFields)
        // `If-Match` may name a variant (another client's coding): only this middleware knows them.
        let withholdsConditions = conditions.isPresent && (!conditions.ifMatch.isEmpty || !forwardsConditions(request))
        // A HEAD on a path a rule covers is answered from its GET, so both heads are the same (RFC 9110
        // §9.3.2): the same Vary, Use-As-Dictionary, Cache-Control, variant ETag and length.
        let headAsGet = method == .head && answersHeadAsGet(request.pathWithoutQuery)
        // The inner response is this closure's own (consumed): every step below edits it in place.
        let onResponse: @Sendable (consuming HTTPServerResponse) -> Void = { (response: consuming HTTPServerResponse) in
            let partition = self.partitioned(request, &response)
            if headAsGet, case .stream(let body) = response.body {
                // Too large to buffer: no body to measure, and none will be sent. The producer is
                // cancelled at once (a proxied stream closes its upstream exchange).
                body.produce(CancelledBodyWriter())
                response.body = .empty
                response.headLength = .unannounced
            }
            self.answer(request, consume response, conditions, partition: partition, respond: respond)
        }
        guard withholdsConditions || headAsGet else { return next.handle(request, respond: onResponse) }
        var inner = request  // changing the head copies its fields: only when needed
        if withholdsConditions {
            for name in ConditionalRequest.fieldNames { inner.head.headerFields[name] = nil }
        }
        if headAsGet { inner.head.method = .get }
        next.handle(inner, respond: onResponse)
    }

    /// Whether a HEAD for `path` is answered from its GET (the inner handler sees a GET; the body is
    /// not sent): when a rule advertises or compresses the path, so the HEAD's head is the GET's. Not on
    /// a history rule's paths (a HEAD must not feed a conversation's window).
    func answersHeadAsGet(_ path: Substring) -> Bool {
        (rules.advertisingRule(for: path) != nil || rules.dictionaryScope(for: path) != nil) && rules.historyRule(for: path) == nil
    }

    /// Whether the inner handler (e.g. an upstream) may see the client's conditional fields
    /// (``ConditionalRequest/fieldNames``) and answer 304 or 412 itself: when nothing here can change the response (no rule
    /// advertises or compresses the path, and the client accepts no coding but identity), its
    /// validators are the inner handler's own. Otherwise they may name a variant only this middleware
    /// knows, so they are evaluated here, after the response is made.
    func forwardsConditions(_ request: HTTPServerRequest) -> Bool {
        let path = request.pathWithoutQuery
        return rules.advertisingRule(for: path) == nil && rules.dictionaryScope(for: path) == nil
            && !AcceptEncoding(request.head.headerFields).acceptsAny(of: settings.preference)
    }

    /// Answers `request` given the inner handler's `response`: from the memo when it holds a valid
    /// entry (its effects replayed), else computed by ``process(_:_:effects:)`` and remembered when
    /// replayable. Conditional fields are evaluated last, in both cases.
    func answer(_ request: HTTPServerRequest, _ response: consuming HTTPServerResponse, _ conditions: ConditionalRequest,
                partition: ExchangePartition = .shared, respond: @escaping @Sendable (consuming HTTPServerResponse) -> Void) {
        // The memo trusts the ETag: only for handlers that declare same (path, ETag) ⇒ same bytes.
        // Partitioned exchanges are never memoised (who asks decides what they get).
        guard partition == .shared, response.isContentAddressed, ResponseMemo.accepts(response), let key = ResponseMemoKey(request) else {
            return compute(request, consume response, conditions, memo: nil, partition: partition, respond: respond)
        }
        // Read before computing: a change during the computation makes the new entry stale at once.
        let generations = ResponseMemo.Generations(variants: variants.generation, library: library.generation)
        if let hit = memo.lookup(key, inner: response, generations: generations),
           hit.effects.replay(path: request.pathWithoutQuery, observer: observer, store: store,
                              variants: variants, library: library) {
            var out = conditions.evaluate(HTTPServerResponse(prepared: hit.prepared, body: hit.body ?? response.body),
                                          identityETag: response.head.headerFields[.eTag])
            finish(request, &out, hit.effects.response ?? passedDecision(request, out, .notOK))
            return respond(out)
        }
        compute(request, consume response, conditions, memo: (key, generations), respond: respond)
    }

    /// Computes the response (and remembers it under `memo` when replayable). Handlers run on a
    /// shared event loop, and a large body may be read, hashed and compressed here (milliseconds per
    /// megabyte), and a dictionary the library has not loaded is read from the store (a disk read and
    /// SHA-256, or a PostgreSQL round trip bounded only by its timeout), so for bodies of
    /// `offLoopBodyBytes` or more, and for requests naming such a dictionary, the work moves to threads
    /// of dcserve's own (`compressionThreads`, `library.storeReads`) instead of stalling the loop's
    /// other connections.
    private func compute(_ request: HTTPServerRequest, _ response: consuming HTTPServerResponse, _ conditions: ConditionalRequest,
                         memo memoSlot: (key: ResponseMemoKey, generations: ResponseMemo.Generations)?,
                         partition: ExchangePartition = .shared, respond: @escaping @Sendable (consuming HTTPServerResponse) -> Void) {
        // Off the loop only for real work: a response passed through untouched (e.g. a proxied body
        // no rule covers, for a client that accepts no coding) is answered here, without a thread hop
        // (and without a closure allocated for it).
        // A store read goes to the library's own threads (it may wait on PostgreSQL for seconds), other
        // large work to the compression threads (it may wait in SingleFlight).
        let readsStore = partition.refusal == nil && namesDictionaryToLoad(request, partition: partition.id)
        if readsStore || (response.body.knownLength ?? 0) >= Self.offLoopBodyBytes, case .work = triage(request, response) {
            let work: @Sendable () -> Void = { [response] in
                self.computeNow(request, response, conditions, memo: memoSlot, partition: partition, respond: respond)
            }
            if readsStore { library.storeReads.async(work) } else { compressionThreads.async(work) }
        } else {
            computeNow(request, consume response, conditions, memo: memoSlot, partition: partition, respond: respond)
        }
    }

    private func computeNow(_ request: HTTPServerRequest, _ response: consuming HTTPServerResponse, _ conditions: ConditionalRequest,
                            memo memoSlot: (key: ResponseMemoKey, generations: ResponseMemo.Generations)?,
                            partition: ExchangePartition, respond: @Sendable (consuming HTTPServerResponse) -> Void) {
        var effects = ResponseEffects()
        // What the memo and the conditions read of the inner response, taken before it is edited.
        let inner: (head: HTTPResponse, length: Int64)? = memoSlot != nil ? response.body.knownLength.map { (response.head, $0) } : nil
        let identityETag = conditions.isPresent ? response.headerValue(.eTag) : nil
        var out = consume response
        let conditional = process(request, &out, effects: &effects, partition: partition)
        if let memoSlot, effects.isReplayable && conditional, let inner {
            let body: ResponseBody? = if case .bytes = out.body { out.body } else { nil }
            memo.insert(memoSlot.key, ResponseMemo.Entry(
                inner: .init(head: inner.head, bodyLength: inner.length), head: out.head, body: body, effects: effects,
                variantsGeneration: memoSlot.generations.variants, libraryGeneration: memoSlot.generations.library))
        }
        let decision = effects.response ?? passedDecision(request, out, .notOK)
        if conditional && conditions.isPresent { out = conditions.evaluate(out, identityETag: identityETag) }
        finish(request, &out, decision)
        respond(out)
    }

    /// Turns the inner response into the middleware's response (before conditional evaluation), in
    /// place, and tells whether the conditions apply to it; every side effect is also noted in `effects`.
    func process(_ request: HTTPServerRequest, _ inner: inout HTTPServerResponse,
                 effects: inout ResponseEffects, partition: ExchangePartition = .shared) -> Bool {
        if case .stream(let body) = inner.body, let encoded = streamingEncoded(request, inner, body) {
            effects.isReplayable = false
            effects.response = passedDecision(request, encoded, .streamed)
            inner = encoded
            return false
        }
        let advertising: DictionaryRuleSet.Rule?, scope: DictionaryScope?, compressible: Bool, path: Substring
        switch triage(request, inner) {
        case .passThrough(let conditional, let replayable, let reason, let vary):
            apply(vary, to: &inner)
            if !replayable { effects.isReplayable = false }
            effects.response = passedDecision(request, inner, reason)
            return conditional
        case .work(let a, let s, let c, let p):
            (advertising, scope, compressible, path) = (a, s, c, p)
        }
        let (out, conditional) = processWork(request, inner, advertising: advertising, scope: scope, compressible: compressible,
                                             path: path, effects: &effects, partition: partition)
        inner = out
        return conditional
    }

    /// `process` for a response the triage sent to work: read, hashed, advertised, negotiated, encoded.
    private func processWork(_ request: HTTPServerRequest, _ response: HTTPServerResponse, advertising: DictionaryRuleSet.Rule?,
                             scope: DictionaryScope?, compressible: Bool, path: Substring,
                             effects: inout ResponseEffects, partition: ExchangePartition) -> (HTTPServerResponse, conditional: Bool) {
        // From here the head is read and edited field by field: built once.
        var response = response
        response.materializeHead()
        guard let resource = identity(of: response, path: path) else {
            effects.isReplayable = false
            effects.response = passedDecision(request, response, .unreadable)
            return (response, false)
        }

        // The body stays the inner handler's (a file is sent with sendfile, a buffered array as it is):
        // only a variant replaces it, with the variant cache's shared array.
        var out = response
        if let rule = advertising, partition.refusal == nil, Self.mayAdvertise(response, of: request, by: rule) {
            if rule.isLive {
                advertiseLive(resource, rule: rule, path: path, partition: partition.id, fields: &out.head.headerFields,
                              records: request.method == .get)
            } else {
                advertise(resource, rule: rule, path: path, fields: &out.head.headerFields,
                          contentAddressed: response.isContentAddressed, effects: &effects)
            }
        }
        if advertising?.isLive == true { effects.isReplayable = false }

        var decision = negotiate(request, out.head.headerFields, resource: resource, path: path, scope: scope,
                                 effects: &effects, partition: partition.id, refusal: partition.refusal)
        // A small body negotiated to dcb/dcz (or br/zstd) without both sizes known: encode the other
        // one of the pair too and send the smaller. The decision is then recorded once it is final
        // (that computation is never memoised: the rival's encode is a variant-cache miss).
        let rival: ContentCoding? = {
            guard settings.compareSmallBodies else { return nil }
            let (coding, hash): (ContentCoding, DictionaryHash?)
            switch decision {
            case .dictionary(let c, let h): (coding, hash) = (c, h)
            case .plain(let c, _) where c != .identity: (coding, hash) = (c, nil)
            default: return nil
            }
            guard let other = CodingChoice.counterpart(of: coding) else { return nil }
            return SmallBodyCodingComparison.rival(
                of: coding, request: request.head.headerFields, allowed: settings.preference, bodySize: resource.count,
                rivalSizeKnown: variants.bestEntry(resource: resource.hash, dictionary: hash, coding: other) != nil)
        }()
        if rival == nil {
            observer.decided(decision, path: path)
            effects.decision = decision
        }
        let ruleName = advertising?.name ?? (scope != nil ? rules.compressingRuleName(for: path) : nil)
        /// The typed reason for a plain coding chosen by negotiation, refined with what only the
        /// middleware knows (no rule covers the path; the live index refused the named hash).
        func reason(_ r: EncodingDecision.PlainReason) -> DecisionReason {
            if scope == nil, [.noDictionaryOffered, .dictionaryCodingsDisabled, .dictionaryCodingNotAccepted].contains(r) {
                return .noRule
            }
            if r == .unknownHash, let refusal = effects.liveRefusal { return refusal }
            if r == .dictionaryCodingsDisabled, let refusal = partition.refusal { return refusal }
            return DecisionReason(r)
        }
        var outcome: ResponseDecision.Outcome
        var timing: ServerTiming?
        switch decision {
        case .notAcceptable:
            effects.response = ResponseDecision(.notAcceptable, rule: ruleName, identityBytes: resource.count)
            return (.text(.notAcceptable, "406 Not Acceptable: no content coding the client accepts can be produced"), true)
        case .plain(.identity, let r):
            outcome = .plain("identity", reason(r))
        case .plain(var coding, let r):
            // One user's body (a partitioned exchange) serves that user: its plain variant is not kept.
            if var (variant, encodeTime) = variant(of: resource, coding: coding, dictionary: nil, effects: &effects,
                                                   refineLater: advertising?.isLive != true, cache: partition.id.isEmpty) {
                // A small body: the smaller of br and zstd (both end up in the variant cache).
                if let rival, let (other, otherTime) = self.variant(of: resource, coding: rival, dictionary: nil,
                                                         effects: &effects, refineLater: advertising?.isLive != true,
                                                         cache: partition.id.isEmpty),
                   other.bytes.count < variant.bytes.count {
                    (coding, variant) = (rival, other)
                    encodeTime = otherTime.map { $0 + (encodeTime ?? .zero) } ?? encodeTime
                    decision = .plain(rival, reason: r)
                }
                if variant.bytes.count >= resource.count && AcceptEncoding(request.head.headerFields).accepts(.identity) {
                    // Incompressible (random, already packed): the coded body would be no smaller than
                    // the body itself, so the body is sent as it is. The variant stays cached, so the
                    // next request decides this without encoding.
                    outcome = .plain("identity", .noSaving)
                } else {
                    apply(variant, coding: coding, dictionary: nil, to: &out)
                    timing = ServerTiming(coding: coding, level: variant.level, encodeTime: encodeTime)
                    outcome = .plain(coding.rawValue, reason(r))
                }
            } else {
                effects.isReplayable = false
                outcome = .plain("identity", .encodingFailed)
            }
        case .dictionary(var coding, let hash):
            // A delta against one user's dictionary serves that user once: not kept as a variant.
            if let found = dictionary(hash, partition: Self.storePartition(partition.id)),
               var (variant, encodeTime) = variant(of: resource, coding: coding, dictionary: found.dictionary, effects: &effects,
                                                   refineLater: advertising?.isLive != true, cache: found.owner == nil) {
                // A small body: the smaller of dcb and dcz (both end up in the variant cache).
                if let rival, let (other, otherTime) = self.variant(of: resource, coding: rival, dictionary: found.dictionary,
                                                         effects: &effects, refineLater: advertising?.isLive != true,
                                                         cache: found.owner == nil),
                   other.bytes.count < variant.bytes.count {
                    (coding, variant) = (rival, other)
                    encodeTime = otherTime.map { $0 + (encodeTime ?? .zero) } ?? encodeTime
                    decision = .dictionary(rival, hash)
                }
                if variant.bytes.count >= resource.count && AcceptEncoding(request.head.headerFields).accepts(.identity) {
                    // A delta no smaller than the body (a new version sharing nothing with the
                    // dictionary): the body is sent as it is, and the dictionary counts as unused.
                    outcome = .plain("identity", .noSaving)
                } else {
                    apply(variant, coding: coding, dictionary: hash, to: &out)
                    timing = ServerTiming(coding: coding, level: variant.level, encodeTime: encodeTime)
                    // A live version still queued for the store is written with a last-served time of its own
                    // (under a second old: a record moves in whole seconds), and the store does not hold it yet.
                    if !liveWrites.isPending(.init(partition: found.owner, hash: hash)) {
                        store.recordServed(hash, partition: found.owner, at: Date())
                    }
                    effects.dictionaryUsed = hash
                    if let rule = advertising, rule.isLive { observer.live(rule: rule.name, .dictionaryHit) }
                    outcome = .delta(coding, hash)
                    if let history, case .allowed(_, let member) = history.index.verdict(hash, partition: partition.id, path: path,
                                                                                        now: history.clock()) {
                        history.recordUse(member, coding: coding, identity: resource.count, sent: variant.bytes.count)
                    }
                }
            } else {
                effects.isReplayable = false
                outcome = .plain("identity", .encodingFailed)
            }
        }
        if rival != nil {
            observer.decided(decision, path: path)
            effects.decision = decision
        }
        let sent = out.body.knownLength.map(Int.init) ?? resource.count
        var made = ResponseDecision(outcome, rule: ruleName, identityBytes: resource.count,
                                    bestPlainBytes: sent, bestPlainCoding: out.head.headerFields[.contentEncoding] ?? "identity",
                                    sentBytes: sent)
        if case .delta = outcome {
            (made.bestPlainBytes, made.bestPlainCoding) = (nil, nil)
        }
        if compressible {
            if case .delta = outcome {
                (made.bestPlainBytes, made.bestPlainCoding) = reportWithPlainAlternative(
                    request, response.head.headerFields, resource: resource, path: path, sent: sent, rule: ruleName,
                    refineLater: advertising?.isLive != true, effects: &effects)
            } else {
                observer.sizes(rule: ruleName, identity: resource.count, bestPlain: sent, sent: sent)
                effects.sizes = (resource.count, sent, sent)
            }
        }
        effects.response = made
        if settings.serverTiming, let timing {
            out.head.headerFields.append(HTTPField(name: ServerTiming.fieldName, value: timing.fieldValue))
        }
        if compressible || scope != nil { addVary(to: &out.head.headerFields, scope: scope) }
        if scope != nil, outcome.isDelta || request.head.headerFields[.availableDictionary] != nil {
            // The coding depended on Available-Dictionary and on the §9.3.3 gate's inputs (a plain coding
            // the gate chose must not be handed to a same-origin request holding that dictionary).
            if !outcome.isDelta {
                out.head.headerFields[.vary] = VaryField.merged(existing: out.head.headerFields[values: .vary],
                                                                adding: Self.gateFieldNames)
            }
            if sharedCaches == .ignoreVary {
                // A cache keyed on the URL and Accept-Encoding alone would hand it to clients holding
                // another dictionary, or none.
                out.head.headerFields[.cacheControl] = Self.privately(out.head.headerFields[.cacheControl])
            }
        }
        return (out, true)
    }
}

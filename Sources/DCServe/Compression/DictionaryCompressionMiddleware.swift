import DictionaryCodec
import DictionaryTransport
import Foundation
import HTTPServer
import HTTPTypes
import Logging
import Synchronization

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
    /// Hashes stored by this process: later serves only update `lastServed` (no disk write).
    private let storedThisRun = Mutex(Set<DictionaryHash>())
    /// `Available-Dictionary` values parsed once each (clients send the same few values again and again).
    private let availableDictionaries = BoundedMemo<String, AvailableDictionary.Parsed>()
    /// Whether a `Content-Type` value is an already-compressed media type, decided once per value.
    private let precompressedTypes = BoundedMemo<String, Bool>(capacity: 1024)
    /// `Use-As-Dictionary` values serialised once per (rule, path).
    private let advertisements = BoundedMemo<String, String?>()
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
    /// History dictionaries (issue #16), looked up by (partition, hash, path) before anything else.
    let history: HistoryDictionaries?
    /// Writes live versions to the store off the request path, many per transaction.
    let liveWrites: LiveStoreWriter
    /// The plain sizes live responses would have had, estimated from a sample.
    let livePlainSizes = LivePlainSizeEstimate()
    /// The log line (at most one a minute) about live versions refused over budget.
    let overBudget: LiveBudgetWarning
    /// Add `DCServe-Decision` to every response (`server.decisionHeader`).
    let decisionHeader: Bool
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
                storeHealth: StoreWriteHealth = StoreWriteHealth()) {
        self.decisionHeader = decisionHeader
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
                       respond: @escaping @Sendable (HTTPServerResponse) -> Void) {
        let method = request.head.method
        guard method == .get || method == .head else {
            // Still strip a private rule's upstream partition header (and mark the response private).
            return next.handle(request) { response in
                let out = self.partitioned(request, response).0
                respond(self.finish(request, out, self.passedDecision(request, out, .method)))
            }
        }
        if request.head.headerFields[.range] != nil {
            next.handle(request) { response in
                let out = self.identityForRange(request, self.partitioned(request, response).0)
                respond(self.finish(request, out, self.passedDecision(request, out, .range)))
            }
            return
        }
        let conditions = ConditionalRequest(request.head.headerFields)
        var inner = request
        // `If-Match` may name a variant (another client's coding): only this middleware knows them.
        if conditions.isPresent && (!conditions.ifMatch.isEmpty || !forwardsConditions(request)) {  // mutating copies the fields: only when needed
            for name in ConditionalRequest.fieldNames { inner.head.headerFields[name] = nil }
        }
        // A HEAD on a path a rule covers is answered from its GET, so both heads are the same (RFC 9110
        // §9.3.2): the same Vary, Use-As-Dictionary, Cache-Control, variant ETag and length.
        let headAsGet = method == .head && answersHeadAsGet(request.pathWithoutQuery)
        if headAsGet { inner.head.method = .get }
        next.handle(inner) { response in
            var (response, partition) = self.partitioned(request, response)
            if headAsGet, case .stream(let body) = response.body {
                // Too large to buffer: no body to measure, and none will be sent. The producer is
                // cancelled at once (a proxied stream closes its upstream exchange).
                body.produce(CancelledBodyWriter())
                response.body = .empty
                response.headLength = .unannounced
            }
            self.answer(request, response, conditions, partition: partition, respond: respond)
        }
    }

    /// For a path a private rule advertises or compresses: the request's partition (from the request,
    /// or from the upstream's header, which is removed here so the client never sees it) and
    /// `Cache-Control: private` on the response. An ambiguous key, or an anonymous exchange carrying
    /// credentials or a private response (``AnonymousPartitionSafeguard``), refuses dictionary
    /// transport for the exchange. Otherwise the response unchanged and the shared partition.
    func partitioned(_ request: HTTPServerRequest, _ response: HTTPServerResponse) -> (HTTPServerResponse, ExchangePartition) {
        let path = request.pathWithoutQuery
        let live = rules.advertisingRule(for: path).flatMap { $0.isLive ? $0 : nil } ?? rules.liveCompressingRule(for: path)
        guard let rule = live ?? rules.historyRule(for: path), let source = rule.partition else { return (response, .shared) }
        var out = response
        var resolved = PartitionID.fromRequest(request.head.headerFields, source: source, secret: partitionSecret)
        if resolved == nil { resolved = PartitionID.fromResponse(&out.head.headerFields, source: source, secret: partitionSecret) }
        var partition = ExchangePartition(id: PartitionID.anonymous.value, refusal: nil)
        switch resolved ?? .anonymous {
        case .user(let id): partition.id = id.value
        case .ambiguous: partition.refusal = .ambiguousPartition
        case .anonymous:
            if !rule.allowsPrivateWhenAnonymous, let concern = AnonymousPartitionSafeguard.concern(
                request: request.head.headerFields, response: out.head.headerFields, key: source) {
                partition.refusal = AnonymousPartitionSafeguard.reason(concern)
            }
        }
        out.head.headerFields[.cacheControl] = Self.privately(out.head.headerFields[.cacheControl])
        // The response depends on who asks: a browser's cache shared by two accounts must not hand one
        // account's response (or its delta) to the other.
        switch source {
        case .header(let name): out.head.headerFields[.vary] = VaryField.merged(existing: out.head.headerFields[values: .vary], adding: [name])
        case .cookie: out.head.headerFields[.vary] = VaryField.merged(existing: out.head.headerFields[values: .vary], adding: ["Cookie"])
        case .upstreamHeader: break  // the upstream's own Vary says what its partition depends on
        }
        return (out, partition)
    }

    /// `value` with the `private` directive (added first when missing; a `public` directive, which
    /// would contradict it, is dropped).
    static func privately(_ value: String?) -> String {
        guard let value, !value.isEmpty else { return "private" }
        return privateValues.value(for: value) { value in
            if DictionaryCacheControl(value).isPrivate { return value }
            let members = value.fieldMembers(separatedBy: ",").filter { $0.lowercased() != "public" }
            return (["private"] + members.map(String.init)).joined(separator: ", ")
        }
    }

    /// ``privately(_:)`` per `Cache-Control` value, and how long a value lets clients use a dictionary
    /// (``DictionaryCacheControl/usableSeconds``), computed once per value: rules and upstreams repeat
    /// a few values on every response.
    static let privateValues = BoundedMemo<String, String>(capacity: 1024)
    static let usableSeconds = BoundedMemo<String, Int?>(capacity: 1024)

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
    func answer(_ request: HTTPServerRequest, _ response: HTTPServerResponse, _ conditions: ConditionalRequest,
                partition: ExchangePartition = .shared, respond: @escaping @Sendable (HTTPServerResponse) -> Void) {
        // The memo trusts the ETag: only for handlers that declare same (path, ETag) ⇒ same bytes.
        // Partitioned exchanges are never memoised (who asks decides what they get).
        guard partition == .shared, response.isContentAddressed, ResponseMemo.accepts(response), let key = ResponseMemoKey(request) else {
            return compute(request, response, conditions, memo: nil, partition: partition, respond: respond)
        }
        // Read before computing: a change during the computation makes the new entry stale at once.
        let generations = ResponseMemo.Generations(variants: variants.generation, library: library.generation)
        if let hit = memo.lookup(key, inner: response, generations: generations),
           hit.effects.replay(path: request.pathWithoutQuery, observer: observer, store: store,
                              variants: variants, library: library) {
            let out = conditions.evaluate(HTTPServerResponse(prepared: hit.prepared, body: hit.body ?? response.body),
                                          identityETag: response.head.headerFields[.eTag])
            return respond(finish(request, out, hit.effects.response ?? passedDecision(request, out, .notOK)))
        }
        compute(request, response, conditions, memo: (key, generations), respond: respond)
    }

    /// Computes the response (and remembers it under `memo` when replayable). Handlers run on a
    /// shared event loop, and a large body may be read, hashed and compressed here (milliseconds per
    /// megabyte), and a dictionary the library has not loaded is read from the store (a disk read and
    /// SHA-256, or a PostgreSQL round trip bounded only by its timeout), so for bodies of
    /// `offLoopBodyBytes` or more, and for requests naming such a dictionary, the work moves to threads
    /// of dcserve's own (`compressionThreads`, `library.storeReads`) instead of stalling the loop's
    /// other connections.
    private func compute(_ request: HTTPServerRequest, _ response: HTTPServerResponse, _ conditions: ConditionalRequest,
                         memo memoSlot: (key: ResponseMemoKey, generations: ResponseMemo.Generations)?,
                         partition: ExchangePartition = .shared, respond: @escaping @Sendable (HTTPServerResponse) -> Void) {
        // Off the loop only for real work: a response passed through untouched (e.g. a proxied body
        // no rule covers, for a client that accepts no coding) is answered here, without a thread hop
        // (and without a closure allocated for it).
        // A store read goes to the library's own threads (it may wait on PostgreSQL for seconds), other
        // large work to the compression threads (it may wait in SingleFlight).
        let readsStore = partition.refusal == nil && namesDictionaryToLoad(request, partition: partition.id)
        if readsStore || (response.body.knownLength ?? 0) >= Self.offLoopBodyBytes, case .work = triage(request, response) {
            let work: @Sendable () -> Void = {
                self.computeNow(request, response, conditions, memo: memoSlot, partition: partition, respond: respond)
            }
            if readsStore { library.storeReads.async(work) } else { compressionThreads.async(work) }
        } else {
            computeNow(request, response, conditions, memo: memoSlot, partition: partition, respond: respond)
        }
    }

    private func computeNow(_ request: HTTPServerRequest, _ response: HTTPServerResponse, _ conditions: ConditionalRequest,
                            memo memoSlot: (key: ResponseMemoKey, generations: ResponseMemo.Generations)?,
                            partition: ExchangePartition, respond: @Sendable (HTTPServerResponse) -> Void) {
        var effects = ResponseEffects()
        let (out, conditional) = process(request, response, effects: &effects, partition: partition)
        if let memoSlot, effects.isReplayable && conditional, let length = response.body.knownLength {
            let body: ResponseBody? = if case .bytes = out.body { out.body } else { nil }
            memo.insert(memoSlot.key, ResponseMemo.Entry(
                inner: .init(head: response.head, bodyLength: length), head: out.head, body: body, effects: effects,
                variantsGeneration: memoSlot.generations.variants, libraryGeneration: memoSlot.generations.library))
        }
        let decision = effects.response ?? passedDecision(request, out, .notOK)
        respond(finish(request, conditional ? conditions.evaluate(out, identityETag: response.head.headerFields[.eTag]) : out, decision))
    }

    // MARK: - Steps

    /// The middleware's response before conditional evaluation, and whether the conditions apply to
    /// it; every side effect is also noted in `effects`.
    func process(_ request: HTTPServerRequest, _ response: HTTPServerResponse,
                 effects: inout ResponseEffects, partition: ExchangePartition = .shared) -> (HTTPServerResponse, conditional: Bool) {
        if case .stream(let body) = response.body, let encoded = streamingEncoded(request, response, body) {
            effects.isReplayable = false
            effects.response = passedDecision(request, encoded, .streamed)
            return (encoded, false)
        }
        let triage = triage(request, response)
        let advertising: DictionaryRuleSet.Rule?, scope: DictionaryScope?, compressible: Bool, path: Substring
        switch triage {
        case .passThrough(let out, let conditional, let replayable, let reason):
            if !replayable { effects.isReplayable = false }
            effects.response = passedDecision(request, out, reason)
            return (out, conditional)
        case .work(let a, let s, let c, let p):
            (advertising, scope, compressible, path) = (a, s, c, p)
        }
        guard let resource = identity(of: response, path: path) else {
            effects.isReplayable = false
            effects.response = passedDecision(request, response, .unreadable)
            return (response, false)
        }

        // The body stays the inner handler's (a file is sent with sendfile, a buffered array as it is):
        // only a variant replaces it, with the variant cache's shared array (#13 item 2).
        var out = response
        if let rule = advertising, partition.refusal == nil, Self.mayAdvertise(response, of: request, by: rule) {
            if rule.isLive {
                advertiseLive(resource, rule: rule, path: path, partition: partition.id, fields: &out.head.headerFields,
                              records: request.head.method == .get)
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
                apply(variant, coding: coding, dictionary: nil, to: &out)
                timing = ServerTiming(coding: coding, level: variant.level, encodeTime: encodeTime)
                outcome = .plain(coding.rawValue, reason(r))
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

    /// What `process` does with a non-stream response, decided without reading its body: pass it
    /// (nearly) as it is, or read, hash and negotiate it (`work`, with what was looked up).
    enum Triage {
        case passThrough(HTTPServerResponse, conditional: Bool, replayable: Bool, reason: DecisionReason)
        case work(advertising: DictionaryRuleSet.Rule?, scope: DictionaryScope?, compressible: Bool, path: Substring)
    }

    /// The cheap part of `process` (no body read): status, size, HEAD of a proxied resource,
    /// no-transform, nothing to advertise or compress, an identity-only client.
    func triage(_ request: HTTPServerRequest, _ response: HTTPServerResponse) -> Triage {
        guard response.head.status == .ok else { return .passThrough(response, conditional: false, replayable: false, reason: .notOK) }
        guard let length = response.body.knownLength else {
            return .passThrough(response, conditional: false, replayable: false, reason: .streamed)
        }
        // The client's If-None-Match / If-Modified-Since may have been kept from the inner handler
        // (``forwardsConditions(_:)``): they are evaluated here on what passes (a file's or an
        // upstream's own validators), so a match still gets its 304.
        guard length <= Self.maximumBodyBytes else {
            return .passThrough(response, conditional: true, replayable: false, reason: .tooLarge)
        }
        if request.head.method == .head && !response.isContentAddressed && !answersHeadAsGet(request.pathWithoutQuery) {
            // A proxied HEAD has no body to store, hash or measure: its head passes as the upstream sent it.
            return .passThrough(response, conditional: true, replayable: false, reason: .head)
        }
        let fields = TriageFields(response.head.headerFields)  // one pass over the head
        if fields.forbidsTransform {
            // Cache-Control: no-transform (RFC 9110 §7.7): no recoding, no dictionary, no storing.
            return .passThrough(response, conditional: true, replayable: true, reason: .noTransform)
        }
        let path = request.pathWithoutQuery
        let alreadyEncoded = fields.contentEncoding.map { $0.lowercased() != "identity" } ?? false
        // No identity, no dictionary: a body still in a coding (one the proxy could not decode: truncated,
        // over the decode cap, an unknown coding) is never advertised or stored.
        let advertising = alreadyEncoded ? nil : rules.advertisingRule(for: path)
        let scope = rules.dictionaryScope(for: path)
        let tooSmall = Int(length) < settings.minimumBytes
        let precompressed = precompressedTypes.value(for: fields.contentType ?? "") { CompressionEligibility.isPrecompressed(contentType: $0) }
        let compressible = !alreadyEncoded && !tooSmall && !precompressed
        guard advertising != nil || compressible else {
            let reason: DecisionReason = alreadyEncoded ? .upstreamEncoded : tooSmall ? .bodyTooSmall : .precompressedMediaType
            return .passThrough(response, conditional: true, replayable: true, reason: reason)
        }
        if advertising == nil, !AcceptEncoding(request.head.headerFields).acceptsAny(of: settings.preference) {
            // Identity-only client and nothing to advertise: the inner response as it is (no read, no
            // hash), with the Vary every variant of a compressible resource carries.
            var out = response
            if scope == nil && !fields.hasVary {
                // What addVary gives without a Vary line: one new line (no merge, no strings built).
                out.head.headerFields.append(HTTPField(name: .vary, value: "Accept-Encoding"))
            } else {
                addVary(to: &out.head.headerFields, scope: scope)
            }
            return .passThrough(out, conditional: true, replayable: true, reason: .identityOnlyClient)
        }
        return .work(advertising: advertising, scope: scope, compressible: compressible, path: path)
    }

    /// A streamed 200 response to GET (a proxied body too large to buffer) compressed on the fly at
    /// the fast level with the client's best plain coding; unchanged but for `Vary` when identity is
    /// this client's best; nil when it must pass as it is (not GET 200, already encoded, no-transform,
    /// an event stream, an already-compressed media type).
    func streamingEncoded(_ request: HTTPServerRequest, _ response: HTTPServerResponse, _ body: StreamBody) -> HTTPServerResponse? {
        let fields = response.head.headerFields
        guard request.head.method == .get, response.head.status == .ok,
              fields[.contentEncoding].map({ $0.lowercased() == "identity" }) ?? true,
              fields[.contentRange] == nil, !ProxyResponseHeaders.forbidsTransform(fields) else { return nil }
        let contentType = (fields[.contentType] ?? "").lowercased()
        guard !contentType.hasPrefix("text/event-stream"),
              !precompressedTypes.value(for: contentType, compute: { CompressionEligibility.isPrecompressed(contentType: $0) })
        else { return nil }
        let accepted = AcceptEncoding(request.head.headerFields)
        var best: (coding: ContentCoding, weight: Int)?
        for coding in settings.preference where !coding.usesDictionary && coding != .identity {
            let weight = accepted.weight(of: coding)
            if weight > 0 && weight > (best?.weight ?? 0) { best = (coding, weight) }
        }
        var out = response
        guard let coding = best?.coding else {
            // Identity is this client's best, but other clients get this resource compressed: a cache
            // must know the representation depends on Accept-Encoding (RFC 9110 §12.5.5).
            addVary(to: &out.head.headerFields, scope: rules.dictionaryScope(for: request.pathWithoutQuery))
            return out
        }
        let level = settings.fastLevels[coding] ?? coding.defaultLevel(.onTheFly)
        out.body = .stream(StreamingEncodedBody.wrap(body, coding: coding, level: level))
        out.head.headerFields[.contentEncoding] = coding.rawValue
        out.head.headerFields[.contentLength] = nil
        out.head.headerFields[.acceptRanges] = nil
        IntegrityFields.remove(from: &out.head.headerFields)
        if let etag = fields[.eTag] {
            out.head.headerFields[.eTag] = VariantETag.make(from: etag, coding: coding, dictionary: nil)
        }
        addVary(to: &out.head.headerFields, scope: rules.dictionaryScope(for: request.pathWithoutQuery))
        return out
    }

    /// `Vary` for a resource whose encoding depends on the request: the dictionary fields too when
    /// stored dictionaries may apply to it.
    func addVary(to fields: inout HTTPFields, scope: DictionaryScope?) {
        if scope != nil {
            VaryField.addDictionaryNames(to: &fields)
        } else {
            fields[.vary] = VaryField.merged(existing: fields[values: .vary], adding: ["Accept-Encoding"])
        }
    }

    /// The identity body's hash and length (and bytes when in memory), from the resource cache when
    /// the inner handler gave an ETag and declared its responses content-addressed (the cache is keyed
    /// by path and ETag only); nil when the body cannot be read (the response is then passed through).
    /// A large file's bytes are not kept: only its digest is cached, and the returned body reads the
    /// file again when an encode needs it.
    func identity(of response: HTTPServerResponse, path: Substring) -> IdentityBody? {
        let etag = response.isContentAddressed ? response.head.headerFields[.eTag] : nil
        let file: FileBody? = if case .file(let f) = response.body { f } else { nil }
        if let etag, let hit = resources.entry(path: path, etag: etag) {
            if hit.bytes != nil || file != nil { return IdentityBody(hit, file: file) }
            // A digest-only hit for a body given as bytes (same path and ETag: the same bytes).
            if case .bytes(let b) = response.body, b.count == hit.count {
                return IdentityBody(ResourceCache.Entry(bytes: b, hash: hit.hash), file: nil)
            }
        }
        if let etag, let file {
            // Identical concurrent requests for one version share one read and hash (SingleFlight).
            do {
                let entry = try reads.run("\(path)\u{0}\(etag)", inputBytes: Int(file.range.count), cached: {
                    resources.entry(path: path, etag: etag)
                }) {
                    resources.insert(path: path, etag: etag, bytes: try file.readAll())
                }.0
                return IdentityBody(entry, file: file)
            } catch {
                logger.warning("cannot read response body for compression", metadata: ["path": "\(path)", "error": "\(error)"])
                return nil
            }
        }
        let bytes: [UInt8]
        switch response.body {
        case .bytes(let b): bytes = b
        case .file(let f):
            do { bytes = try f.readAll() } catch {
                logger.warning("cannot read response body for compression", metadata: ["path": "\(path)", "error": "\(error)"])
                return nil
            }
        case .stream: return nil
        }
        guard let etag else { return IdentityBody(ResourceCache.Entry(bytes: bytes, hash: SHA256.hash(bytes)), file: nil) }
        return IdentityBody(resources.insert(path: path, etag: etag, bytes: bytes), file: nil)
    }

    /// Whether `rule` may make `response` a dictionary. A private response (credentials, Set-Cookie,
    /// Cache-Control: private) becomes one only when the rule allows private responses or keeps them
    /// to their partition; a static file's (content-addressed) does not depend on who asks.
    static func mayAdvertise(_ response: HTTPServerResponse, of request: HTTPServerRequest, by rule: DictionaryRuleSet.Rule) -> Bool {
        (rule.isLive ? rule.partition != nil : response.isContentAddressed) || rule.allowPrivate
            || CompressionEligibility.privacyConcern(request: request.head.headerFields, response: response.head.headerFields) == nil
    }

    /// Adds `Use-As-Dictionary` and a fresh `Cache-Control`, and makes sure the store holds the bytes.
    /// `contentAddressed`: the response is a static file's (``HTTPServerResponse/isContentAddressed``).
    func advertise(_ resource: IdentityBody, rule: DictionaryRuleSet.Rule, path: Substring, fields: inout HTTPFields,
                   contentAddressed: Bool, effects: inout ResponseEffects) {
        guard let lifetime = Self.lifetime(rule, upstream: fields[.cacheControl], contentAddressed: contentAddressed) else { return }
        let (cacheControl, usable) = lifetime
        let advertisement = rule.advertisement(path: path)
        guard var value = advertisements.value(for: "\(rule.name)\u{0}\(path)", compute: { _ in try? advertisement.fieldValue() })
        else { return }
        if let ttl = rule.ttlSeconds { value += ", ttl=\(ttl)" }
        let now = Date()
        var isNew = storedThisRun.withLock { $0.insert(resource.hash).inserted }
        // Stored earlier in this run, but retention may have removed it since: then store it again,
        // since every response advertised as a dictionary must be in the store.
        if !isNew && !store.recordServed(resource.hash, at: now) { isNew = true }
        if isNew {
            do {
                _ = try store.put(try resource.bytes(), description: DictionaryDescription(
                    pattern: rule.match, matchDestinations: rule.matchDest, id: advertisement.id,
                    rule: rule.name, sourcePath: String(path), maxAge: usable), now: now)
                observer.storedDictionary(resource.hash, bytes: resource.count)
                storeHealth.succeeded(logger: logger)
                effects.isReplayable = false
            } catch {
                // Not advertising a dictionary we could not store: the client could never use it.
                _ = storedThisRun.withLock { $0.remove(resource.hash) }
                storeHealth.failed("\(error)", logger: logger, message: "cannot store dictionary; not advertising it",
                                   metadata: ["path": "\(path)"])
                effects.isReplayable = false
                return
            }
        } else {
            effects.advertised = resource.hash
        }
        fields[.useAsDictionary] = value
        fields[.cacheControl] = cacheControl
    }

    /// Blocks until every live version queued for the store is written (shutdown).
    public func drainLiveWrites() { liveWrites.drain() }

    /// Advertises a live response (a rule with `upstreamVersions` or `partition`): records it as the
    /// newest version of (rule, partition, path), makes it usable at once (``DictionaryLibrary/insert``)
    /// and writes it to the store on a background queue — a version lost before it is written only
    /// costs a later miss (the store verifies bytes on load). Not advertised when the lifetime policy
    /// gives no `Cache-Control` that lets clients use it.
    /// `records: false` (a HEAD answered from its GET): the fields only; no version is recorded or stored
    /// (the client gets no body to keep).
    func advertiseLive(_ resource: IdentityBody, rule: DictionaryRuleSet.Rule, path: Substring, partition: String,
                       fields: inout HTTPFields, records: Bool = true) {
        guard let lifetime = Self.lifetime(rule, upstream: fields[.cacheControl], contentAddressed: false) else { return }
        let (cacheControl, usable) = lifetime
        let advertisement = rule.advertisement(path: path)
        guard var value = advertisements.value(for: "\(rule.name)\u{0}\(path)", compute: { _ in try? advertisement.fieldValue() })
        else { return }
        if let ttl = rule.ttlSeconds { value += ", ttl=\(ttl)" }
        guard records else {
            fields[.useAsDictionary] = value
            fields[.cacheControl] = rule.partition == nil ? cacheControl : Self.privately(cacheControl)
            return
        }
        // Live responses are proxied, buffered bodies: their bytes are held (no read here).
        guard let bytes = try? resource.bytes() else { return }
        let owner = rule.partition == nil ? nil : partition
        // While store writes fail, a version is written (a probe: the first success resumes advertising)
        // but not advertised: a client could never use a version the store does not hold.
        // Not in the live index either: it would push the client's previous version out of retention.
        // Nor when the store's budget (or the index's memory) is full of versions clients were promised
        // (``LiveVersionIndex/offer``): it could not be kept until this client returns.
        let advertises = !storeHealth.isFailing
        // Nor when the store's writer is too far behind to queue it (the disk slower than the traffic):
        // it would be advertised and never stored.
        if advertises && !liveWrites.hasRoom(for: bytes.count) && store.metadata(resource.hash, partition: owner) == nil {
            liveWrites.refuseOverloaded()
            return
        }
        if advertises && !live.offer(resource.hash, at: LiveVersionIndex.SlotKey(rule: rule.name, partition: partition, path: String(path)),
                                     bytes: resource.count, keepSeconds: Double(usable)) {
            observer.live(rule: rule.name, .overBudget)
            overBudget.refused(rule: rule.name, index: live)
            return
        }
        observer.live(rule: rule.name, .response)
        let loaded = advertises && library.touch(resource.hash, partition: owner)
        if advertises && !loaded {
            // Hashed already (the identity body's hash); used for a delta once or twice: dcz references
            // it as a prefix rather than building a CDict.
            library.insert(CompressionDictionary(bytes: bytes, knownHash: resource.hash, prefersPrefix: true),
                           candidate: DictionaryCandidate(hash: resource.hash, pattern: rule.match, matchDestinations: rule.matchDest),
                           partition: owner)
        }
        let now = Date()
        // A version the library holds was written (or queued) when it was first seen: only its
        // last-served time changes, unless the store lost it. A version new to the library (nearly
        // every live response) is written without asking the store first: the write is an upsert,
        // so one the store kept from an earlier run only has its record refreshed.
        if !loaded || !store.recordServed(resource.hash, partition: owner, at: now) {
            let description = DictionaryDescription(
                pattern: rule.match, matchDestinations: rule.matchDest, id: advertisement.id, rule: rule.name,
                sourcePath: String(path), maxAge: usable, partition: owner)
            let live = self.live, hash = resource.hash
            liveWrites.submit(.init(partition: owner, hash: hash),
                              write: DictionaryStoreWrite(bytes: bytes, hash: hash, description: description, now: now),
                              stillRetained: { !advertises || live.retains(hash, partition: partition) })
        }
        guard advertises else { return }
        fields[.useAsDictionary] = value
        fields[.cacheControl] = rule.partition == nil ? cacheControl : Self.privately(cacheControl)
    }

    /// The `Cache-Control` an advertised response of `rule` gets and how long clients may use it
    /// (seconds); nil when the policy is `upstream` (or `automatic` for a response that is not a static
    /// file's) and the upstream's value does not allow use as a dictionary (then the response is not
    /// advertised: no freshness is invented).
    static func lifetime(_ rule: DictionaryRuleSet.Rule, upstream: String?, contentAddressed: Bool) -> (String, Int)? {
        switch rule.lifetime {
        case .automatic where contentAddressed, .maxAge:
            return ("max-age=\(rule.maxAgeSeconds)", rule.maxAgeSeconds)
        case .cacheControl(let value):
            return usableSeconds.value(for: value) { DictionaryCacheControl($0).usableSeconds }.map { (value, $0) }
        case .upstream, .automatic:
            guard let upstream, let usable = usableSeconds.value(for: upstream, compute: { DictionaryCacheControl($0).usableSeconds })
            else { return nil }
            return (upstream, usable)
        }
    }

    /// A failed dictionary lookup makes `effects` not replayable (the store may learn the hash later).
    func negotiate(_ request: HTTPServerRequest, _ responseFields: HTTPFields, resource: IdentityBody,
                   path: Substring, scope: DictionaryScope?, effects: inout ResponseEffects, partition: String = "",
                   refusal: DecisionReason? = nil) -> EncodingDecision {
        var codings = Set(settings.preference)
        // No rule covers the path, or the exchange's partition refuses dictionary transport.
        if scope == nil || refusal != nil { codings.subtract([.dcb, .dcz]) }
        var policy = NegotiationPolicy(codings: codings, minimumBodySize: settings.minimumBytes,
                                       allowsPrivateResponses: scope?.allowPrivate ?? false)
        policy.preference = settings.preference
        var sizes: [ContentCoding: Int] = [:]
        for coding in settings.preference where !coding.usesDictionary {
            sizes[coding] = variants.bestEntry(resource: resource.hash, dictionary: nil, coding: coding)?.bytes.count
        }
        let offeredValues = request.head.headerFields[values: .availableDictionary]
        let available = offeredValues.count == 1
            ? availableDictionaries.value(for: offeredValues[0]) { AvailableDictionary.parse(fieldValue: $0) }
            : AvailableDictionary.parse(request.head.headerFields)
        if let offered = available.value?.hash {
            for coding in [ContentCoding.dcz, .dcb] {
                sizes[coding] = variants.bestEntry(resource: resource.hash, dictionary: offered, coding: coding)?.bytes.count
            }
        }
        return Negotiation.decide(request: request.head.headerFields, path: String(path), response: responseFields,
                                  bodySize: resource.count, policy: policy, knownSizes: sizes,
                                  availableDictionary: available) { hash in
            // A history dictionary (issue #16) is found by (partition, hash, path) only: another
            // partition or group, or an expired build, is answered exactly like an unknown hash.
            if let history = self.history {
                switch history.index.verdict(hash, partition: partition, path: path, now: history.clock()) {
                case .notHistory: break
                case .allowed(let candidate, _):
                    effects.isReplayable = false
                    // Still held (retention may have removed it from the store since it was published):
                    // otherwise the client gets a plain coding, as for an unknown hash.
                    return self.dictionary(hash, partition: Self.storePartition(partition)) != nil ? candidate : nil
                case .refused:
                    effects.isReplayable = false
                    if let rule = self.rules.historyRule(for: path) { history.metrics.refused(rule: rule.name) }
                    return nil
                }
            }
            // A live version is found by (partition, hash) only: another partition's hash, or one past
            // the retention, is answered exactly like an unknown hash.
            let verdict = self.live.verdict(hash, partition: partition)
            switch verdict {
            case .notLive, .allowed: break
            case .otherPartition, .pastRetention:
                effects.isReplayable = false
                effects.liveRefusal = verdict == .otherPartition ? .partitionMismatch : .pastRetention
                if let rule = self.rules.advertisingRule(for: path), rule.isLive {
                    self.observer.live(rule: rule.name, verdict == .otherPartition ? .partitionMismatch : .pastRetention)
                }
                return nil
            }
            let found = self.dictionary(hash, partition: Self.storePartition(partition))?.candidate
            if found == nil { effects.isReplayable = false }
            return found
        }
    }

    /// Whether the request's `Available-Dictionary` names a dictionary that answering it would read
    /// from the store (held there, not loaded): its own partition's, or a shared one.
    func namesDictionaryToLoad(_ request: HTTPServerRequest, partition: String?) -> Bool {
        let offered = request.head.headerFields[values: .availableDictionary]
        guard offered.count == 1,
              let hash = availableDictionaries.value(for: offered[0], compute: { AvailableDictionary.parse(fieldValue: $0) }).value?.hash
        else { return false }
        if let own = Self.storePartition(partition ?? ""), library.needsStoreRead(hash, partition: own) { return true }
        return library.needsStoreRead(hash, partition: nil)
    }

    /// The store partition of a request's live partition ("" = shared → nil).
    static func storePartition(_ partition: String) -> String? { partition.isEmpty ? nil : partition }

    /// The dictionary `hash` as a request of store partition `partition` may use it: that partition's
    /// own (found by (partition, hash)), else a shared one (shared bytes are nobody's secret); with the
    /// partition owning it (nil = shared). Never another partition's.
    func dictionary(_ hash: DictionaryHash, partition: String?)
        -> (dictionary: CompressionDictionary, candidate: DictionaryCandidate, owner: String?)? {
        if let partition, let own = library.lookup(hash, partition: partition) { return (own.dictionary, own.candidate, partition) }
        return library.lookup(hash, partition: nil).map { ($0.dictionary, $0.candidate, nil) }
    }

    /// Reports the sizes of a dictionary-coded response together with what it would have weighed
    /// without dictionaries (the client's best plain coding), for the "saved by dictionaries" metric.
    /// When that plain variant is not cached yet it is encoded off the request path (and cached for
    /// later requests) and the sizes are reported when it is done; with the `DCServe-Decision` field
    /// on, it is encoded now (the field states the saving).
    /// Returns the best plain size and coding when known now (nil, nil when reported later).
    /// `refineLater: false` (live responses) does not encode the plain alternative of every response:
    /// it is estimated from a sample (``LivePlainSizeEstimate``), measured at the coding's cheapest
    /// level and never kept (each live version is new; a best-level encode of ~50 KB costs more CPU
    /// than the response itself).
    func reportWithPlainAlternative(_ request: HTTPServerRequest, _ responseFields: HTTPFields,
                                    resource: IdentityBody, path: Substring, sent: Int, rule: String?,
                                    refineLater: Bool = true, effects: inout ResponseEffects) -> (Int?, String?) {
        let identity = resource.count
        func report(_ bestPlain: Int) {
            effects.sizes = (identity, bestPlain, sent)
            observer.sizes(rule: rule, identity: identity, bestPlain: bestPlain, sent: sent)
        }
        guard case .plain(let coding, _) = negotiate(request, responseFields, resource: resource, path: path, scope: nil,
                                                     effects: &effects),
              coding != .identity else {
            report(identity)
            return (identity, "identity")
        }
        if let cached = variants.bestEntry(resource: resource.hash, dictionary: nil, coding: coding) {
            report(cached.bytes.count)
            return (cached.bytes.count, coding.rawValue)
        }
        effects.isReplayable = false
        // A live response's baseline at the coding's cheapest level, not kept: nobody else will ask
        // for this body.
        let measure: @Sendable () -> Int? = { [self] in
            var unrecorded = ResponseEffects()  // this response is not memoised: nothing to record
            return variant(of: resource, coding: coding, dictionary: nil, effects: &unrecorded,
                           refineLater: refineLater, cache: refineLater,
                           level: refineLater ? nil : coding.cheapestLevel)?.0.bytes.count
        }
        // A live response's baseline is estimated from a sample of the rule's responses (each one is
        // new: measuring it is a full encode, dearer than the delta sent).
        let estimateKey = LivePlainSizeEstimate.Key(rule: rule ?? "", coding: coding)
        let (estimated, due) = refineLater ? (nil, true) : livePlainSizes.estimate(estimateKey, identity: identity)
        if decisionHeader && estimated == nil {
            // The field states what the delta saved against the best plain coding, so that encode is
            // done now (the same work the background would do, on this response's thread).
            let measured = measure()
            if !refineLater { livePlainSizes.record(estimateKey, identity: identity, plain: measured) }
            let size = measured ?? identity
            report(size)
            return (size, coding.rawValue)
        }
        if let estimated { report(estimated) }
        guard due else { return (estimated, estimated.map { _ in coding.rawValue }) }
        compressionThreads.async {  // it may wait in SingleFlight: not on Dispatch's pool
            let size = measure()
            if !refineLater { self.livePlainSizes.record(estimateKey, identity: identity, plain: size) }
            if estimated == nil { self.observer.sizes(rule: rule, identity: identity, bestPlain: size ?? identity, sent: sent) }
        }
        return (estimated, estimated.map { _ in coding.rawValue })
    }

    // MARK: - Decision

    /// The decision for a response passed on without negotiation (`reason`), sent as it is.
    func passedDecision(_ request: HTTPServerRequest, _ response: HTTPServerResponse, _ reason: DecisionReason) -> ResponseDecision {
        let coding = response.head.headerFields[.contentEncoding] ?? "identity"
        let sent = response.body.knownLength.map(Int.init)
        return ResponseDecision(.plain(coding, reason), rule: rules.coveringRuleName(for: request.pathWithoutQuery),
                                identityBytes: coding == "identity" ? sent : nil, bestPlainBytes: sent,
                                bestPlainCoding: coding, sentBytes: sent)
    }

    /// Records `decision` for the response about to be sent (observer, access-log note) and adds the
    /// `DCServe-Decision` field when configured. Called once per response, after the memo and
    /// conditional evaluation: the field is never part of a memoised or cached head.
    func finish(_ request: HTTPServerRequest, _ response: HTTPServerResponse, _ decision: ResponseDecision) -> HTTPServerResponse {
        var out = response
        observer.responded(ResponseRecord(method: request.head.method.rawValue, path: String(request.pathWithoutQuery),
                                          status: out.head.status.code, decision: decision))
        out.accessLogNote = DecisionLogNote(decision: decision)
        if decisionHeader { out.head.headerFields[Self.decisionFieldName] = decision.fieldValue }
        return out
    }

    /// The encoded body from the cache, or encoded now at the fast level (then, when `refineLater`, the
    /// best level is queued in the background), with the time spent encoding in this request (nil for a
    /// cache hit). nil when encoding failed (logged; identity is sent). Live responses pass
    /// `refineLater: false`: a version replaced within moments would pay a best-level encode (brotli 11,
    /// zstd 19: tens of milliseconds for 50 KB) that hardly any request could use.
    /// `cache: false` (a delta against one user's dictionary, which no other request can use; the
    /// "bytes saved" baseline of a live response) encodes without keeping the result, at `level` when
    /// given.
    func variant(of resource: IdentityBody, coding: ContentCoding,
                 dictionary: CompressionDictionary?, effects: inout ResponseEffects,
                 refineLater: Bool = true, cache: Bool = true, level: Int? = nil) -> (CachedVariant, Duration?)? {
        let key = VariantKey(resource: resource.hash, dictionary: dictionary?.hash, coding: coding)
        if let cached = variants.bestEntry(for: key) {
            observer.variantCache(hit: true)
            effects.variantHits.append(key)
            return (cached, nil)
        }
        observer.variantCache(hit: false)
        effects.isReplayable = false
        let fast = level ?? settings.fastLevels[coding] ?? coding.defaultLevel(.onTheFly)
        let best = settings.bestLevels[coding] ?? coding.defaultLevel(.precompressed)
        let encoded: CachedVariant
        let start = ContinuousClock.now
        var input: [UInt8] = []  // the leader's identity bytes, for the background best-level encode
        do {
            // Identical concurrent requests share one encode (SingleFlight). A file-backed body is read
            // (and checked against its hash) only here, by the leader.
            let (variant, role) = try encodes.run(key, inputBytes: resource.count, cached: { variants.bestEntry(for: key) }) {
                input = try resource.bytes()
                let v = CachedVariant(bytes: try coding.encode(input, dictionary: dictionary, level: fast), level: fast)
                observer.encoded(coding: coding, level: fast, duration: ContinuousClock.now - start)
                if cache { _ = variants.insert(v, for: key) }
                return v
            }
            encoded = variant
            if role != .leader { return (encoded, ContinuousClock.now - start) }
        } catch {
            logger.error("encoding failed; sending identity", metadata: ["coding": "\(coding)", "error": "\(error)"])
            return nil
        }
        let elapsed = ContinuousClock.now - start
        if best != fast && refineLater && cache {
            let bytes = input
            let variants = self.variants, observer = self.observer, logger = self.logger
            _ = background.submit(key) {
                do {
                    let start = ContinuousClock.now
                    let better = CachedVariant(bytes: try coding.encode(bytes, dictionary: dictionary, level: best), level: best)
                    observer.encoded(coding: coding, level: best, duration: ContinuousClock.now - start)
                    _ = variants.insert(better, for: key)
                } catch {
                    logger.error("background encoding failed", metadata: ["coding": "\(coding)", "error": "\(error)"])
                }
            }
        }
        return (encoded, elapsed)
    }

    func apply(_ variant: CachedVariant, coding: ContentCoding, dictionary: DictionaryHash?, to response: inout HTTPServerResponse) {
        response.body = .bytes(variant.bytes)
        response.head.headerFields[.contentEncoding] = coding.rawValue
        response.head.headerFields[.acceptRanges] = nil
        IntegrityFields.remove(from: &response.head.headerFields)
        if dictionary != nil {
            // The §9.3.3 gate decided this variant: a shared cache must not hand it to a request
            // the gate would refuse (RFC 9842 §9.3.3; SPEC.md §5).
            response.head.headerFields[.vary] = VaryField.merged(existing: response.head.headerFields[values: .vary],
                                                                 adding: Self.gateFieldNames)
        }
        if let etag = response.head.headerFields[.eTag] {
            response.head.headerFields[.eTag] = VariantETag.make(from: etag, coding: coding, dictionary: dictionary)
        }
    }

    /// Range requests are answered by the inner handler as identity; the response still varies.
    func identityForRange(_ request: HTTPServerRequest, _ response: HTTPServerResponse) -> HTTPServerResponse {
        var out = response
        guard out.head.status == .ok || out.head.status == .partialContent else { return out }
        let path = request.pathWithoutQuery
        if rules.dictionaryScope(for: path) != nil {
            VaryField.addDictionaryNames(to: &out.head.headerFields)
        }
        // The Cache-Control a full 200 would get as an advertised dictionary: a 206 must carry it
        // (RFC 9110 §15.3.7), and a 200 that ignored the Range is the same representation.
        if let rule = rules.advertisingRule(for: path), Self.mayAdvertise(response, of: request, by: rule),
           let (cacheControl, _) = Self.lifetime(rule, upstream: out.head.headerFields[.cacheControl],
                                                contentAddressed: response.isContentAddressed) {
            out.head.headerFields[.cacheControl] = rule.partition == nil ? cacheControl : Self.privately(cacheControl)
        }
        // The same `private` a 200 to this request gets behind caches that ignore Vary.
        if sharedCaches == .ignoreVary, rules.dictionaryScope(for: path) != nil,
           request.head.headerFields[.availableDictionary] != nil {
            out.head.headerFields[.cacheControl] = Self.privately(out.head.headerFields[.cacheControl])
        }
        return out
    }
}

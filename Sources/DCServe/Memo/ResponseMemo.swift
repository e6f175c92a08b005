import HTTPServer
import HTTPTypes
import Locking

/// Remembers the compression middleware's finished responses (dcb/dcz, plain codings, identity,
/// pass-through), so a repeated request costs a key, a lookup and a comparison instead of
/// negotiation, header building and cache lookups.
///
/// An entry answers a request only when all of these hold:
/// - the ``ResponseMemoKey`` is equal (method, authority, target, the negotiation fields);
/// - the inner handler's response *for this request* has the same status, the same fields in the same
///   order, the same body length, and a strong `ETag` (so the same bytes: a static file changed in
///   place gets a new ETag from its `fstat`, and the very next request misses);
/// - the variant cache's and the dictionary library's generations are the ones the entry was made in
///   (nothing was inserted, upgraded, evicted, loaded or forgotten since).
/// The middleware's rules and settings are immutable, so they need no check. Conditional fields are
/// evaluated by the caller on every hit; the recorded ``ResponseEffects`` are replayed by the caller.
///
/// Bounded: at most `capacity` entries and `byteBudget` body bytes (bodies are shared with the
/// caches, copy-on-write); when either would be exceeded the memo is emptied. A stale entry is
/// replaced by the next insert for its key. Thread-safe (one `Locked`); entries are immutable values.
final class ResponseMemo: Sendable {
    /// What the inner handler answered when the entry was made.
    struct InnerResponse: Sendable {
        let head: HTTPResponse
        let bodyLength: Int64
    }

    struct Entry: Sendable {
        let inner: InnerResponse
        /// The middleware's response before conditional evaluation, its head serialised once. A nil
        /// `body` means: the inner response's own body (pass-through responses, possibly with a changed
        /// head).
        let prepared: PreparedHead
        let body: ResponseBody?
        let effects: ResponseEffects
        let variantsGeneration: UInt64
        let libraryGeneration: UInt64

        init(inner: InnerResponse, head: HTTPResponse, body: ResponseBody?, effects: ResponseEffects,
             variantsGeneration: UInt64, libraryGeneration: UInt64) {
            self.inner = inner
            prepared = PreparedHead(head)
            self.body = body
            self.effects = effects
            self.variantsGeneration = variantsGeneration
            self.libraryGeneration = libraryGeneration
        }

        var head: HTTPResponse { prepared.head }
        var bodyBytes: Int { body?.knownLength.map(Int.init) ?? 0 }
    }

    /// The generations an entry is made in and checked against.
    struct Generations: Equatable, Sendable {
        let variants: UInt64
        let library: UInt64
    }

    let capacity: Int
    let byteBudget: Int
    private let state = Locked(State())

    private struct State {
        var entries: [ResponseMemoKey: Entry] = [:]
        var bytes = 0
    }

    init(capacity: Int = 4096, byteBudget: Int) {
        self.capacity = capacity
        self.byteBudget = byteBudget
    }

    /// Number of entries (for tests and diagnostics).
    var count: Int { state.withLock { $0.entries.count } }
    /// Body bytes held now (at most `byteBudget`).
    var bytes: Int { state.withLock { $0.bytes } }

    /// Forgets every entry.
    func removeAll() {
        state.withLock { s in
            s.entries.removeAll()
            s.bytes = 0
        }
    }

    /// Whether the memo may hold an answer for `inner`: a 200 with a strong `ETag` and a known length.
    static func accepts(_ inner: HTTPServerResponse) -> Bool {
        guard inner.head.status == .ok, inner.body.knownLength != nil,
              let etag = inner.head.headerFields.joinedValue(.eTag) else { return false }
        return !etag.hasPrefix("W/")
    }

    /// The entry for `key` if it is still valid for `inner` (this request's inner response) in
    /// `generations`; nil otherwise.
    func lookup(_ key: ResponseMemoKey, inner: HTTPServerResponse, generations: Generations) -> Entry? {
        guard let entry = state.withLock({ $0.entries[key] }) else { return nil }
        guard entry.variantsGeneration == generations.variants, entry.libraryGeneration == generations.library,
              entry.inner.bodyLength == inner.body.knownLength,
              Self.sameHead(entry.inner.head, inner.head) else { return nil }
        return entry
    }

    /// Remembers `entry` for `key`, replacing what was there.
    func insert(_ key: ResponseMemoKey, _ entry: Entry) {
        let size = entry.bodyBytes
        guard size <= byteBudget else { return }
        state.withLock { s in
            if let old = s.entries[key] { s.bytes -= old.bodyBytes }
            if s.entries[key] == nil && s.entries.count >= capacity || s.bytes + size > byteBudget {
                s.entries.removeAll(keepingCapacity: true)
                s.bytes = 0
            }
            s.entries[key] = entry
            s.bytes += size
        }
    }

    /// Same status (code and reason) and every field with its value, in the same order.
    static func sameHead(_ a: HTTPResponse, _ b: HTTPResponse) -> Bool {
        if a.isIdentical(to: b) { return true }
        guard a.status == b.status, a.status.reasonPhrase == b.status.reasonPhrase else { return false }
        let fa = a.headerFields, fb = b.headerFields
        guard fa.count == fb.count else { return false }
        for (x, y) in zip(fa, fb) where x.name != y.name || x.value != y.value { return false }
        return true
    }
}

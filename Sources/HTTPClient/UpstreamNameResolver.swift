import Dispatch
import HTTPCore
import Locking

/// Looks up upstream host names off the event loops, on threads of its own, and remembers each
/// answer for `lifetime`, so a new connection to a known name does not wait for a lookup.
///
/// - Lookups run on `BlockingWorkThreads` (at most `threads` at once, FIFO beyond), never on
///   Dispatch's shared pool: `getaddrinfo` blocks for as long as the system resolver takes, and on
///   Linux Dispatch adds about one thread per second while its threads wait, so slow lookups there held
///   up every other user of the pool.
/// - Concurrent requests for one `host:port` share one lookup.
/// - Answers are kept per `host:port` for `lifetime` (default 30 s: short, so a changed DNS record is
///   followed within half a minute; the system resolver keeps no cache of its own here). Failures are
///   not kept: the next connection looks up again (the client's `failureBackoff` already keeps a
///   failing server from being tried on every request).
/// - Address literals never come here (`Socket.connect(host:port:)` takes them as they are).
///
/// Thread-safety: every method may be called from any thread. Completions run on a lookup thread.
public final class UpstreamNameResolver: Sendable {
    /// The lookup: `Socket.resolve` (blocking `getaddrinfo`); tests inject their own.
    public typealias Lookup = @Sendable (_ host: String, _ port: UInt16) throws -> [SocketAddress]
    public typealias Completion = @Sendable (Result<[SocketAddress], any Error>) -> Void

    /// The resolver clients use unless given another: one cache and one set of threads per process.
    public static let shared = UpstreamNameResolver()
    /// How long an answer is used for new connections.
    public static let defaultLifetime: Duration = .seconds(30)
    /// Lookups running at once (more wait their turn, without a thread).
    public static let defaultThreads = 4
    /// Names kept at most (upstream names come from the configuration: a handful); expired answers go
    /// first, then the cache is emptied.
    static let maxEntries = 256

    private struct Key: Hashable {
        let host: String
        let port: UInt16
    }
    private enum Entry {
        case resolved([SocketAddress], expires: UInt64)
        case resolving([Completion])
    }

    private let lookup: Lookup
    private let lifetime: UInt64
    private let now: @Sendable () -> UInt64
    private let threads: BlockingWorkThreads
    private let entries = Locked<[Key: Entry]>([:])

    /// `now`: a monotonic clock in nanoseconds (tests move it to expire answers).
    public init(lifetime: Duration = UpstreamNameResolver.defaultLifetime,
                threads: Int = UpstreamNameResolver.defaultThreads,
                lookup: @escaping Lookup = { try Socket.resolve(host: $0, port: $1) },
                now: @escaping @Sendable () -> UInt64 = { DispatchTime.now().uptimeNanoseconds }) {
        self.lookup = lookup
        self.lifetime = lifetime.nanosecondsForDeadline
        self.now = now
        self.threads = BlockingWorkThreads(name: "dcserve.resolve", maxThreads: threads)
    }

    /// The cached addresses of `host:port` while fresh, else nil (does not start a lookup).
    public func cached(host: String, port: UInt16) -> [SocketAddress]? {
        let t = now()
        return entries.withLock { entries in
            if case .resolved(let addresses, let expires)? = entries[Key(host: host, port: port)], t < expires {
                return addresses
            }
            return nil
        }
    }

    /// Calls `completion` with the addresses of `host:port`, or the lookup's error: from the cache when
    /// fresh (at once, on the calling thread), else once the lookup (shared with concurrent callers for
    /// the same name) ends, on a lookup thread.
    public func resolve(host: String, port: UInt16, completion: @escaping Completion) {
        let key = Key(host: host, port: port)
        let t = now()
        enum Step { case hit([SocketAddress]), joined, lookUp }
        let step: Step = entries.withLock { entries in
            switch entries[key] {
            case .resolved(let addresses, let expires)? where t < expires:
                return .hit(addresses)
            case .resolving(var waiting)?:
                waiting.append(completion)
                entries[key] = .resolving(waiting)
                return .joined
            default:
                if entries.count >= Self.maxEntries { Self.evict(&entries, at: t) }
                entries[key] = .resolving([completion])
                return .lookUp
            }
        }
        switch step {
        case .hit(let addresses): return completion(.success(addresses))
        case .joined: return
        case .lookUp: break
        }
        threads.async { [self] in
            let result = Result { try lookup(host, port) }
            let waiting: [Completion] = entries.withLock { entries in
                guard case .resolving(let waiting)? = entries[key] else { return [] }
                if case .success(let addresses) = result {
                    entries[key] = .resolved(addresses, expires: now() &+ lifetime)
                } else {
                    entries[key] = nil
                }
                return waiting
            }
            for completion in waiting { completion(result) }
        }
    }

    /// Drops the answer kept for `host:port`, so the next connection looks the name up again: called
    /// when a connection to the kept addresses failed (the name may point elsewhere now). A lookup in
    /// progress is left to finish.
    public func forget(host: String, port: UInt16) {
        entries.withLock { entries in
            let key = Key(host: host, port: port)
            if case .resolved? = entries[key] { entries[key] = nil }
        }
    }

    /// Makes room: drops expired answers, and every answer when that is not enough (lookups in
    /// progress stay: their callers wait for them).
    private static func evict(_ entries: inout [Key: Entry], at t: UInt64) {
        entries = entries.filter { if case .resolved(_, let expires) = $0.value { t < expires } else { true } }
        if entries.count >= maxEntries {
            entries = entries.filter { if case .resolving = $0.value { true } else { false } }
        }
    }
}

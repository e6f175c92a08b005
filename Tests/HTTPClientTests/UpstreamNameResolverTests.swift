#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import Foundation
@testable import HTTPClient
import HTTPCore
import HTTPTypes
import Synchronization
import Testing
import Locking

/// `UpstreamNameResolver` through a real `HTTPClient` and real sockets: a name is looked up once per
/// lifetime (then again), failures are not kept, concurrent lookups of one name are one, a lookup that
/// blocks holds no Dispatch thread and no connect to a literal address, and the connect deadline
/// covers the lookup. The lookup function is the test's (a slow DNS server cannot be arranged here);
/// it answers with `Socket.resolve` of 127.0.0.1, i.e. real addresses.
@Suite("Upstream name resolution: cache, expiry, threads of its own, connect deadline", .serialized)
struct UpstreamNameResolverTests {
    /// A lookup that counts its calls per name, answers 127.0.0.1, and waits while `gate` is closed.
    final class Lookups: Sendable {
        let calls = Locked<[String: Int]>([:])
        let failNext = Atomic<Bool>(false)
        let gate = DispatchGroup()
        let gateClosed = Atomic<Bool>(false)
        func count(_ host: String) -> Int { calls.withLock { $0[host, default: 0] } }
        var total: Int { calls.withLock { $0.values.reduce(0, +) } }
        func closeGate() { gateClosed.store(true, ordering: .sequentiallyConsistent); gate.enter() }
        func openGate() { if gateClosed.exchange(false, ordering: .sequentiallyConsistent) { gate.leave() } }
        var lookup: UpstreamNameResolver.Lookup {
            { host, port in
                self.calls.withLock { $0[host, default: 0] += 1 }
                if self.gateClosed.load(ordering: .sequentiallyConsistent) { _ = self.gate.wait(timeout: .now() + 60) }
                if self.failNext.exchange(false, ordering: .sequentiallyConsistent) {
                    throw SocketError(call: "getaddrinfo(\(host))", errno: EHOSTUNREACH)
                }
                return try Socket.resolve(host: "127.0.0.1", port: port)
            }
        }
    }

    final class Clock: Sendable {
        let nanoseconds = Atomic<UInt64>(1_000_000_000)
        func advance(_ d: Duration) { nanoseconds.add(d.nanosecondsForDeadline, ordering: .sequentiallyConsistent) }
        var now: @Sendable () -> UInt64 { { self.nanoseconds.load(ordering: .sequentiallyConsistent) } }
    }

    /// A client of one upstream server named `host` (one connection per exchange, so every exchange connects).
    func makeNamedClient(_ host: String, port: Int, resolver: UpstreamNameResolver,
                         connectTimeout: Duration = .seconds(5)) -> (HTTPClient, EventLoop, EventLoopGroup) {
        var configuration = HTTPClientConfiguration(servers: [UpstreamServer(host: host, port: port)])
        configuration.connectTimeout = connectTimeout
        configuration.readTimeout = .seconds(10)
        configuration.maxRequestsPerConnection = 1
        configuration.failureBackoff = .zero
        let group = EventLoopGroup(count: 1, sweepInterval: .milliseconds(50))
        return (HTTPClient(configuration: configuration, loops: group, resolver: resolver), group.loops[0], group)
    }

    @Test func aNameIsLookedUpOncePerLifetimeAndFailuresAreNotKept() {
        let upstream = TestUpstream(handler: echoPathHandler)
        defer { upstream.stop() }
        let lookups = Lookups(), clock = Clock()
        let resolver = UpstreamNameResolver(lifetime: .seconds(30), lookup: lookups.lookup, now: clock.now)
        let (client, loop, _) = makeNamedClient("upstream.test", port: upstream.port, resolver: resolver)
        for i in 0..<4 {
            let r = run(client, request("/r\(i)"), on: loop)
            #expect(r.error == nil && r.head?.status == .ok)
        }
        #expect(upstream.acceptedConnections == 4)  // four connections,
        #expect(lookups.count("upstream.test") == 1)  // one lookup
        #expect(resolver.cached(host: "upstream.test", port: UInt16(upstream.port)) != nil)
        // Still fresh just before the lifetime ends; looked up again after it.
        clock.advance(.seconds(29))
        #expect(run(client, request("/fresh"), on: loop).error == nil)
        #expect(lookups.count("upstream.test") == 1)
        clock.advance(.seconds(2))
        #expect(resolver.cached(host: "upstream.test", port: UInt16(upstream.port)) == nil)
        #expect(run(client, request("/expired"), on: loop).error == nil)
        #expect(lookups.count("upstream.test") == 2)
        // A failed lookup fails the connect and is not kept: the next connection looks up again.
        clock.advance(.seconds(31))
        lookups.failNext.store(true, ordering: .sequentiallyConsistent)
        let failed = run(client, request("/failed"), on: loop)
        #expect(failed.error == .connectFailed(server: UpstreamServer(host: "upstream.test", port: upstream.port),
                                              errno: EHOSTUNREACH))
        #expect(run(client, request("/after"), on: loop).error == nil)
        #expect(lookups.count("upstream.test") == 4)
    }

    @Test func aFailedConnectDropsTheKeptAnswer() {
        let upstream = TestUpstream(handler: echoPathHandler)
        let port = upstream.port
        let lookups = Lookups(), clock = Clock()
        let resolver = UpstreamNameResolver(lifetime: .seconds(30), lookup: lookups.lookup, now: clock.now)
        let (client, loop, _) = makeNamedClient("moved.test", port: port, resolver: resolver)
        #expect(run(client, request("/a"), on: loop).error == nil)
        #expect(resolver.cached(host: "moved.test", port: UInt16(port)) != nil)
        // The server is gone from the kept address: the connect is refused, and the answer is dropped
        // (well within its lifetime), so the next connection looks the name up again.
        #expect(upstream.stopRefusingConnects())
        let refused = run(client, request("/b"), on: loop)
        #expect(refused.error == .connectFailed(server: UpstreamServer(host: "moved.test", port: port), errno: ECONNREFUSED))
        #expect(resolver.cached(host: "moved.test", port: UInt16(port)) == nil)
        _ = run(client, request("/c"), on: loop)
        #expect(lookups.count("moved.test") == 2)
        // Forgetting a name that is not kept does nothing.
        resolver.forget(host: "other.test", port: 1)
        #expect(resolver.cached(host: "other.test", port: 1) == nil)
    }

    @Test func concurrentRequestsForOneNameShareOneLookup() {
        let lookups = Lookups()
        let resolver = UpstreamNameResolver(lookup: lookups.lookup)
        lookups.closeGate()
        let answers = Locked<[Result<[SocketAddress], any Error>]>([])
        for _ in 0..<5 {
            resolver.resolve(host: "shared.test", port: 8080) { result in answers.withLock { $0.append(result) } }
        }
        #expect(eventually { lookups.count("shared.test") == 1 })
        usleep(50_000)
        #expect(lookups.count("shared.test") == 1 && answers.withLock { $0.isEmpty })
        lookups.openGate()
        #expect(eventually { answers.withLock { $0.count } == 5 })
        let addresses = answers.withLock { $0.map { try? $0.get() } }
        #expect(Set(addresses.map { $0?.map(\.description) ?? [] }) == [["127.0.0.1:8080"]])
        // Now cached: answered at once, on the calling thread, without a lookup.
        let hit = Locked<[SocketAddress]?>(nil)
        resolver.resolve(host: "shared.test", port: 8080) { result in hit.withLock { $0 = try? result.get() } }
        #expect(hit.withLock { $0 }?.map(\.description) == ["127.0.0.1:8080"])
        #expect(lookups.total == 1)
    }

    /// Sixteen lookups of distinct names block (a slow resolver). Meanwhile work queued on Dispatch's
    /// shared pool runs at once (on Linux the pool would add only ~1 thread/s if they parked its
    /// threads), a connect to a literal address completes, and each blocked connect fails by its connect
    /// deadline instead of waiting for the lookup.
    @Test func aBlockedLookupHoldsNoDispatchThreadNorOtherConnectsAndTheDeadlineCoversIt() {
        let upstream = TestUpstream(handler: echoPathHandler)
        defer { upstream.stop() }
        let lookups = Lookups()
        let resolver = UpstreamNameResolver(threads: 16, lookup: lookups.lookup)
        lookups.closeGate()
        defer { lookups.openGate() }
        let names = (0..<16).map { "slow\($0).test" }
        let delegates = names.map { _ in CollectingDelegate() }
        var clients: [(HTTPClient, EventLoopGroup)] = []
        for (name, delegate) in zip(names, delegates) {
            let (client, loop, group) = makeNamedClient(name, port: upstream.port, resolver: resolver,
                                                        connectTimeout: .seconds(2))
            clients.append((client, group))
            client.execute(request("/slow"), on: loop, delegate: delegate)
        }
        #expect(eventually { lookups.total >= 1 })
        // Dispatch's pool is not held: work queued there now runs at once (on Dispatch, it would wait
        // behind the lookups, about a second each).
        let other = DispatchSemaphore(value: 0)
        DispatchQueue.global().async { other.signal() }
        #expect(other.wait(timeout: .now() + 10) == .success, "Dispatch work waited for lookups")
        // Every lookup runs at once, on a thread of its own (none queued behind a blocked one).
        #expect(eventually { lookups.total == 16 }, "lookups started: \(lookups.total)")
        // A connect to a literal address does not wait for the lookups.
        let (literal, loop, _) = makeClient(ports: [upstream.port])
        let r = run(literal, request("/literal"), on: loop)
        #expect(r.error == nil && bodyText(r).hasPrefix("/literal"))
        // The connect deadline covers the lookup: each blocked exchange fails by it (the lookups still block).
        for (name, delegate) in zip(names, delegates) {
            #expect(delegate.wait(seconds: 20), "\(name): the exchange waited for its lookup past the connect deadline")
            #expect(delegate.snapshot.error == .timedOut(server: UpstreamServer(host: name, port: upstream.port), phase: "connect"))
        }
        #expect(lookups.total == 16)
        _ = clients
    }
}

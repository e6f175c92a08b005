@testable import DCServe
import DictionaryCodec
import DictionaryTransport
import Foundation
import HTTPServer
import Testing
import TestSupport

/// `DCServeServer`'s start and shutdown order on real sockets (127.0.0.1, free ports).
@Suite struct DCServeServerTests {
    let key = VariantKey(resource: SHA256.hash([1]), dictionary: nil, coding: .gzip)

    func configuration(_ dir: URL, port: Int = 0) throws -> DCServeConfiguration {
        try FileManager.default.createDirectory(at: dir.appendingPathComponent("site"), withIntermediateDirectories: true)
        try "hello\n".write(to: dir.appendingPathComponent("site/index.html"), atomically: true, encoding: .utf8)
        var c = DCServeConfiguration()
        c.site.root = dir.appendingPathComponent("site").path
        c.store.path = dir.appendingPathComponent("store").path
        c.server.port = port
        c.admin.port = 0
        try c.validate()
        return c
    }

    @Test func failedStartStopsEverythingItStarted() async throws {
        let dir = uniqueTemporaryURL("dcserve-server")
        defer { try? FileManager.default.removeItem(at: dir) }
        let first = try DCServeServer(configuration: try configuration(dir))
        try first.start()
        let port = try #require(first.main.boundAddresses.first?.port)
        #expect(first.application.readiness.problem() == nil)

        let second = try DCServeServer(configuration: try configuration(dir, port: Int(port)))
        #expect {
            try second.start()
        } throws: { error in
            "\(error)".contains("port already in use")
        }
        // The failed start stopped the application: background work refuses new jobs, nothing is ready.
        #expect(!second.application.background.submit(key) {})
        #expect(second.application.readiness.problem() == "listeners are not open")
        #expect(second.admin?.boundAddresses.isEmpty ?? true)

        let forced = await first.shutdown()
        #expect(!forced)
        #expect(!first.application.background.submit(key) {})
        #expect(first.main.boundAddresses.isEmpty)
    }

    @Test func serverSettingsReachTheHTTPServer() throws {
        var c = DCServeConfiguration()
        c.server.headerTimeoutSeconds = 2.5
        c.server.bodyTimeoutSeconds = 31_536_000
        c.server.writeTimeoutSeconds = 0.001
        c.server.idleTimeoutSeconds = 7
        c.server.maxRequestsPerConnection = 3
        c.server.maxBodyBytes = 0
        c.server.eventLoops = 2
        let s = DCServeServer.serverConfiguration(c, hosts: ["127.0.0.1", "::1"])
        #expect(s.headerReadTimeout == .milliseconds(2500) && s.bodyReadTimeout == .seconds(31_536_000))
        #expect(s.writeTimeout == .milliseconds(1) && s.idleTimeout == .seconds(7))
        #expect(s.maxRequestsPerConnection == 3 && s.limits.maxBodyBytes == 0 && s.eventLoopCount == 2)
        #expect(s.listenAddresses.map(\.host) == ["127.0.0.1", "::1"])
    }
}

import Foundation
import Testing
@testable import HTTPServer

/// CertificateReloader against real PEM files made with the openssl CLI in a temporary directory.
@Suite struct CertificateReloaderTests {
    let directory: URL

    init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("dcserve-tls-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        for name in ["a", "b"] {
            try openssl(["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                         "-keyout", path("\(name).key"), "-out", path("\(name).pem"), "-days", "1", "-subj", "/CN=\(name).test"])
        }
    }

    func path(_ name: String) -> String { directory.appendingPathComponent(name).path }

    func openssl(_ arguments: [String]) throws {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        p.arguments = arguments
        p.standardOutput = FileHandle.nullDevice
        p.standardError = FileHandle.nullDevice
        try p.run()
        p.waitUntilExit()
        try #require(p.terminationStatus == 0)
    }

    @Test func reloaderKeepsTheOldContextWhenFilesBreak() throws {
        let chain = path("live.pem"), key = path("live.key")
        try FileManager.default.copyItem(atPath: path("a.pem"), toPath: chain)
        try FileManager.default.copyItem(atPath: path("a.key"), toPath: key)
        let reloader = try CertificateReloader(configuration: TLSConfiguration(certificateChainFile: chain, privateKeyFile: key))
        let first = reloader.current
        try reloader.reload()
        let second = reloader.current
        #expect(first !== second)
        try Data("not a key".utf8).write(to: URL(fileURLWithPath: key))
        #expect(throws: TLSContextError.self) { try reloader.reload() }
        #expect(reloader.current === second)
    }
}

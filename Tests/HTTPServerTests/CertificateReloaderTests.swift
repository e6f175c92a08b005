import Foundation
import Testing
import TestPKI
@testable import HTTPServer

/// CertificateReloader against real PEM files made with the openssl CLI in a temporary directory.
@Suite struct CertificateReloaderTests {
    let pki: TestCertificates

    init() throws { pki = try TestCertificates(selfSigned: ["a", "b"]) }

    func path(_ name: String) -> String { pki.path(name) }

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

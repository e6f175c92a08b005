import Foundation
import Testing
import TestPKI
@testable import HTTPCore

/// TLSContext against real PEM files made with the openssl CLI in a temporary directory.
@Suite struct TLSContextTests {
    let pki: TestCertificates

    init() throws { pki = try TestCertificates(selfSigned: ["a", "b"]) }

    func path(_ name: String) -> String { pki.path(name) }

    @Test func loadsChainAndKeyAndSNIEntries() throws {
        var configuration = TLSConfiguration(certificateChainFile: path("a.pem"), privateKeyFile: path("a.key"))
        configuration.sni["b.test"] = .init(chainFile: path("b.pem"), keyFile: path("b.key"))
        let context = try TLSContext(configuration: configuration)
        #expect(context.context(forServerName: "B.TEST") != nil)
        #expect(context.context(forServerName: "c.test") == nil)
    }

    @Test func mismatchedKeyIsAClearError() throws {
        let configuration = TLSConfiguration(certificateChainFile: path("a.pem"), privateKeyFile: path("b.key"))
        do {
            _ = try TLSContext(configuration: configuration)
            Issue.record("a key that does not match the certificate was accepted")
        } catch let error as TLSContextError {
            #expect(error.description.contains("b.key"))
            #expect(error.description.contains("a.pem"))
        }
    }

    @Test func missingFilesAreClearErrors() throws {
        do {
            _ = try TLSContext(configuration: TLSConfiguration(certificateChainFile: path("missing.pem"), privateKeyFile: path("a.key")))
            Issue.record("a missing certificate file was accepted")
        } catch let error as TLSContextError {
            #expect(error.description.contains("cannot load certificate chain") && error.description.contains("missing.pem"))
        }
        var configuration = TLSConfiguration(certificateChainFile: path("a.pem"), privateKeyFile: path("a.key"))
        configuration.sni["b.test"] = .init(chainFile: path("b.pem"), keyFile: path("missing.key"))
        #expect(throws: TLSContextError.self) { try TLSContext(configuration: configuration) }
    }
}

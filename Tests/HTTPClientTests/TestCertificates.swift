import Foundation
import Testing

/// (Same as Tests/HTTPCoreTests/TestCertificates.swift: test targets cannot share files.)
/// A throwaway PKI made with the openssl CLI in a temporary directory: a CA, a server certificate
/// it signed for DNS `localhost` and IP 127.0.0.1, and an unrelated self-signed certificate.
struct TestCertificates {
    let directory: URL

    init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("dcserve-pki-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try openssl(["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                     "-keyout", path("ca.key"), "-out", path("ca.pem"), "-days", "1", "-subj", "/CN=dcserve test CA"])
        try openssl(["req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                     "-keyout", path("server.key"), "-out", path("server.csr"), "-subj", "/CN=localhost"])
        try "subjectAltName=DNS:localhost,IP:127.0.0.1\n".write(toFile: path("san.ext"), atomically: true, encoding: .utf8)
        try openssl(["x509", "-req", "-in", path("server.csr"), "-CA", path("ca.pem"), "-CAkey", path("ca.key"),
                     "-CAcreateserial", "-out", path("server.pem"), "-days", "1", "-extfile", path("san.ext")])
        try openssl(["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                     "-keyout", path("other.key"), "-out", path("other.pem"), "-days", "1", "-subj", "/CN=localhost"])
    }

    func path(_ name: String) -> String { directory.appendingPathComponent(name).path }

    func remove() { try? FileManager.default.removeItem(at: directory) }

    private func openssl(_ arguments: [String]) throws {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        p.arguments = arguments
        p.standardOutput = FileHandle.nullDevice
        p.standardError = FileHandle.nullDevice
        try p.run()
        p.waitUntilExit()
        try #require(p.terminationStatus == 0)
    }
}

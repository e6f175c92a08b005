import Foundation

/// Throwaway certificates for TLS tests, made with the openssl CLI in a fresh temporary directory
/// (shared by the test targets that need them; a test target cannot share files with another).
/// `remove()` deletes the directory. A value; not for concurrent mutation (there is none after init).
public struct TestCertificates: Sendable {
    public struct OpenSSLFailed: Error, CustomStringConvertible {
        public let arguments: [String]
        public let status: Int32
        public var description: String { "openssl \(arguments.joined(separator: " ")) exited with \(status)" }
    }

    public let directory: URL

    /// A small PKI: `ca.pem`/`ca.key`, `server.pem`/`server.key` signed by that CA for DNS `localhost`
    /// and IP 127.0.0.1, and an unrelated self-signed `other.pem`/`other.key` for CN `localhost`.
    public init() throws {
        directory = try Self.makeDirectory()
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

    /// Self-signed certificates only: `<name>.pem`/`<name>.key` for CN `<name>.test`, one per name.
    public init(selfSigned names: [String]) throws {
        directory = try Self.makeDirectory()
        for name in names {
            try openssl(["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                         "-keyout", path("\(name).key"), "-out", path("\(name).pem"), "-days", "1", "-subj", "/CN=\(name).test"])
        }
    }

    public func path(_ name: String) -> String { directory.appendingPathComponent(name).path }

    public func remove() { try? FileManager.default.removeItem(at: directory) }

    private static func makeDirectory() throws -> URL {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("dcserve-pki-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        return directory
    }

    /// Runs the openssl CLI to its end (``ChildProcess``: not Foundation's `Process`, whose wait can hang).
    private func openssl(_ arguments: [String]) throws {
        let status = try ChildProcess.run("/usr/bin/openssl", arguments)
        guard status == 0 else { throw OpenSSLFailed(arguments: arguments, status: status) }
    }
}

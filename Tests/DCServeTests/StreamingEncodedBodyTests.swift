@testable import DCServe
import DictionaryCodec
import DictionaryTransport
import Foundation
import HTTPServer
import HTTPTypes
import Logging
import Testing
import Locking

/// Collects what a stream body writes; acknowledges each chunk at once.
final class CollectingWriter: ResponseBodyWriter, @unchecked Sendable {
    private let state = Locked<(bytes: [UInt8], finished: Bool, aborted: Bool)>(([], false, false))
    var isCancelled: Bool { false }
    func write(_ chunk: [UInt8], then: @escaping @Sendable () -> Void) {
        state.withLock { $0.bytes += chunk }
        then()
    }
    func finish() { state.withLock { $0.finished = true } }
    func abort() { state.withLock { $0.aborted = true } }
    var result: (bytes: [UInt8], finished: Bool, aborted: Bool) { state.withLock { $0 } }
}

/// Streamed (unbuffered) 200 bodies are compressed on the fly with the client's best plain coding.
@Suite struct StreamingEncodedBodyTests {
    static let chunks: [[UInt8]] = (0..<6).map { i in Array(String(repeating: "line \(i) of a long streamed body\n", count: 3000).utf8) }

    static func run(acceptEncoding: String, fields: HTTPFields = [.contentType: "application/json"]) throws
        -> (HTTPResponse, [UInt8], Bool) {
        let (m, dir) = try PerUserResponseTests.middleware()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let handler = ClosureHandler { _, respond in
            respond(HTTPServerResponse(status: .ok, headerFields: fields, body: .stream(StreamBody { writer in
                // The collecting writer acknowledges synchronously: a plain loop keeps the contract.
                for chunk in chunks { writer.write(chunk) {} }
                writer.finish()
            })))
        }
        let request = HTTPServerRequest(head: HTTPRequest(method: .get, scheme: "http", authority: "a", path: "/api/big",
                                                          headerFields: [.acceptEncoding: acceptEncoding]))
        let response = try awaitedResponse { m.handle(request, next: handler, respond: $0) }
        guard case .stream(let body) = response.body else { Issue.record("not a stream"); return (response.head, [], false) }
        let sink = CollectingWriter()
        body.produce(sink)
        let r = sink.result
        return (response.head, r.bytes, r.finished && !r.aborted)
    }

    @Test(arguments: [("zstd", ContentCoding.zstd), ("br;q=0.9, gzip;q=0.5", .br), ("gzip", .gzip)])
    func compressedWithTheClientsBestCoding(accept: String, expected: ContentCoding) throws {
        let (head, bytes, finished) = try Self.run(acceptEncoding: accept)
        #expect(finished)
        #expect(head.headerFields[.contentEncoding] == expected.rawValue)
        #expect(head.headerFields[values: .vary].joined(separator: ",").contains("Accept-Encoding"))
        #expect(try expected.decode(bytes) == Self.chunks.flatMap { $0 })
        #expect(bytes.count < Self.chunks.flatMap { $0 }.count / 10)
    }

    @Test func identityClientsAndNoTransformGetTheStreamAsItIs() throws {
        let cases: [(String, HTTPFields)] = [
            ("identity", [.contentType: "application/json"]),
            ("gzip", [.contentType: "application/json", .cacheControl: "no-transform"]),
            ("gzip", [.contentType: "image/png"]),
            ("gzip", [.contentType: "text/event-stream"]),
        ]
        for (accept, fields) in cases {
            let (head, bytes, finished) = try Self.run(acceptEncoding: accept, fields: fields)
            #expect(finished)
            #expect(head.headerFields[.contentEncoding] == nil, "\(accept) \(fields)")
            #expect(bytes == Self.chunks.flatMap { $0 })
        }
    }
}

// Drives the portable dictionary client against a running server, for
// Tests/integration/test_client_end_to_end.py. One process runs a list of steps with one transport:
//
//   dictionary-client-e2e --base http://127.0.0.1:PORT --transport ahc|urlprotocol --store DIR --out DIR
//                         [--link-credentials bearer|none] STEP...
//   STEP: get NAME PATH ACCOUNT   GET base+PATH as ACCOUNT ("-" for none; otherwise it sends
//                                 `Authorization: Bearer ACCOUNT` and uses ACCOUNT as the store partition)
//         wait-links              wait for the Link dictionary fetches queued so far
//         clear ACCOUNT           forget ACCOUNT's dictionaries (logout)
//         plain-urlsession PATH ACCOUNT   the request the client would send (decorated), through a plain
//                                 URLSession without the protocol: prints the outcome (on Linux, libcurl
//                                 refuses a dcz body)
//
// For each `get` it writes OUT/NAME.body (decoded) and OUT/NAME.wire (the body as received) and prints
// one JSON line: status, the response's Content-Encoding and Content-Length as received, and the
// client's measurement. Decoding uses the client's default decoders (pure Swift). Link fetches carry
// the account's `Authorization` (none with `--link-credentials none`).
import AsyncHTTPClient
import DictionaryClient
import DictionaryClientAsyncHTTPClient
import DictionaryClientURLSession
import Foundation
import HTTPTypes
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

struct Failure: Error, CustomStringConvertible { let description: String }

/// Wraps a transport and keeps the last response received for each path (what the wire carried).
final class RecordingTransport: DictionaryHTTPTransport, @unchecked Sendable {
    let inner: any DictionaryHTTPTransport
    private let lock = NSLock()
    private var responses: [String: ClientResponse] = [:]
    private var requests: [String: HTTPFields] = [:]

    init(_ inner: any DictionaryHTTPTransport) { self.inner = inner }

    func send(_ request: HTTPRequest, body: [UInt8]?) async throws -> ClientResponse {
        let response = try await inner.send(request, body: body)
        lock.withLock {
            responses[request.path ?? ""] = response
            requests[request.path ?? ""] = request.headerFields
        }
        return response
    }

    func last(_ path: String) -> (request: HTTPFields, response: ClientResponse)? {
        lock.lock()
        defer { lock.unlock() }
        guard let response = responses[path], let request = requests[path] else { return nil }
        return (request, response)
    }
}

/// Collects the URLProtocol path's measurements (reported through the session's handler).
final class MeasurementLog: @unchecked Sendable {
    private let lock = NSLock()
    private var byPath: [String: ResponseMeasurement] = [:]
    func record(_ request: URLRequest, _ measurement: ResponseMeasurement) {
        lock.lock()
        byPath[request.url.map { $0.path + ($0.query.map { "?" + $0 } ?? "") } ?? ""] = measurement
        lock.unlock()
    }
    func take(_ path: String) -> ResponseMeasurement? {
        lock.lock()
        defer { lock.unlock() }
        return byPath.removeValue(forKey: path)
    }
}

func bearer(_ account: String) -> HTTPFields {
    account.isEmpty ? HTTPFields() : [.authorization: "Bearer \(account)"]
}

func json(_ object: [String: Any]) -> String {
    let data = try! JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
    return String(decoding: data, as: UTF8.self)
}

func describe(_ m: ResponseMeasurement) -> [String: Any] {
    var dictionary: [String: Any]
    switch m.dictionary {
    case .used(let hash, let id): dictionary = ["kind": "used", "hash": hash.hex, "id": id ?? NSNull()]
    case .notUsedByServer(let offered): dictionary = ["kind": "notUsedByServer", "hash": offered.hex]
    case .notOffered(let reason): dictionary = ["kind": "notOffered", "reason": reason]
    }
    let (seconds, attoseconds) = m.decodeDuration.components
    return ["wireBytes": m.wireBytes, "decodedBytes": m.decodedBytes, "contentCodings": m.contentCodings,
            "dictionary": dictionary, "decodeNanoseconds": seconds * 1_000_000_000 + attoseconds / 1_000_000_000]
}

func run() async throws {
    var args = Array(CommandLine.arguments.dropFirst())
    var options: [String: String] = [:]
    while let first = args.first, first.hasPrefix("--") {
        guard args.count >= 2 else { throw Failure(description: "\(first) needs a value") }
        options[String(first.dropFirst(2))] = args[1]
        args.removeFirst(2)
    }
    guard let base = options["base"], let storeDir = options["store"], let out = options["out"],
          let mode = options["transport"], ["ahc", "urlprotocol"].contains(mode) else {
        throw Failure(description: "usage: --base URL --transport ahc|urlprotocol --store DIR --out DIR STEP...")
    }
    let client = DictionaryClient(store: try ClientDictionaryStore(location: .directory(storeDir)))
    let ahc = AsyncHTTPClientTransport()
    let recorder = RecordingTransport(ahc)
    let sendsCredentials = (options["link-credentials"] ?? "bearer") == "bearer"
    let credentials: DictionaryHTTPSession.LinkCredentials = { _, account in sendsCredentials ? bearer(account) : HTTPFields() }
    let measurements = MeasurementLog()
    let session: DictionaryHTTPSession
    var urlSession: URLSession?
    if mode == "ahc" {
        session = DictionaryHTTPSession(client: client, transport: recorder, linkCredentials: credentials)
    } else {
        // The app's view: an ordinary URLSession whose configuration lists the protocol first. On Linux
        // the protocol sends through AsyncHTTPClient (FoundationNetworking cannot receive dcz).
        let dictionarySession = DictionaryURLSession(
            client: client, transport: recorder,
            account: { request in
                let value = request.value(forHTTPHeaderField: "Authorization") ?? ""
                return value.hasPrefix("Bearer ") ? String(value.dropFirst(7)) : ""
            },
            linkCredentials: credentials, measurementHandler: measurements.record)
        DictionaryURLProtocol.install(dictionarySession)
        session = dictionarySession.session
        urlSession = URLSession(configuration: DictionaryURLProtocol.configuration(base: .ephemeral))
    }

    var i = 0
    while i < args.count {
        switch args[i] {
        case "get":
            guard i + 3 < args.count else { throw Failure(description: "get NAME PATH ACCOUNT") }
            let name = args[i + 1], path = args[i + 2], account = args[i + 3] == "-" ? "" : args[i + 3]
            i += 4
            let status: Int
            let body: [UInt8]
            let measurement: ResponseMeasurement
            if let urlSession {
                var request = URLRequest(url: URL(string: base + path)!)
                if !account.isEmpty { request.setValue("Bearer \(account)", forHTTPHeaderField: "Authorization") }
                let (data, response) = try await urlSession.data(for: request)
                status = (response as! HTTPURLResponse).statusCode
                body = [UInt8](data)
                guard let m = measurements.take(path) else { throw Failure(description: "no measurement for \(path)") }
                measurement = m
            } else {
                let processed = try await session.execute(base + path, fields: bearer(account), account: account)
                status = processed.status
                body = processed.body
                measurement = processed.measurement
            }
            guard let wire = recorder.last(path) else { throw Failure(description: "nothing recorded for \(path)") }
            try Data(body).write(to: URL(fileURLWithPath: "\(out)/\(name).body"))
            try Data(wire.response.body).write(to: URL(fileURLWithPath: "\(out)/\(name).wire"))
            print(json([
                "step": name, "status": status, "bodyBytes": body.count,
                "availableDictionary": wire.request[.availableDictionary] ?? NSNull(),
                "acceptEncoding": wire.request[.acceptEncoding] ?? NSNull(),
                "contentEncoding": wire.response.fields[.contentEncoding] ?? NSNull(),
                "contentLength": wire.response.fields[.contentLength] ?? NSNull(),
                "measurement": describe(measurement),
            ]))
        case "plain-urlsession":
            guard i + 2 < args.count else { throw Failure(description: "plain-urlsession PATH ACCOUNT") }
            let path = args[i + 1], account = args[i + 2] == "-" ? "" : args[i + 2]
            i += 3
            let prepared = try await client.prepare(url: base + path, partition: account, fields: bearer(account))
            var request = URLRequest(url: URL(string: base + path)!)
            for field in prepared.fields { request.setValue(field.value, forHTTPHeaderField: field.name.rawName) }
            let plain = URLSession(configuration: .ephemeral)
            defer { plain.finishTasksAndInvalidate() }
            do {
                let (data, response) = try await plain.data(for: request)
                let http = response as! HTTPURLResponse
                print(json(["step": "plain-urlsession", "status": http.statusCode, "bytes": data.count,
                            "contentEncoding": http.value(forHTTPHeaderField: "Content-Encoding") ?? NSNull(),
                            "availableDictionary": prepared.fields[.availableDictionary] ?? NSNull()]))
            } catch {
                print(json(["step": "plain-urlsession", "error": "\(error)",
                            "availableDictionary": prepared.fields[.availableDictionary] ?? NSNull()]))
            }
        case "wait-links":
            i += 1
            await session.waitForDictionaryFetches()
            let counts = session.linkQueue.counts
            print(json(["step": "wait-links", "completed": counts.completed, "failed": counts.failed, "dropped": counts.dropped]))
        case "clear":
            guard i + 1 < args.count else { throw Failure(description: "clear ACCOUNT") }
            try client.clear(account: args[i + 1])
            print(json(["step": "clear", "account": args[i + 1], "remaining": client.store.entries(partition: args[i + 1]).count]))
            i += 2
        default:
            throw Failure(description: "unknown step \(args[i])")
        }
    }
    urlSession?.finishTasksAndInvalidate()
    try await ahc.shutdown()
}

do {
    try await run()
} catch {
    FileHandle.standardError.write(Data("dictionary-client-e2e: \(error)\n".utf8))
    exit(1)
}

import DictionaryClient
import DictionaryClientSystemCodecs
import DictionaryCodec
import Foundation
import HTTPTypes
import TestSupport

/// A settable clock for the client (no sleeping, no timing assertions).
final class TestClock: @unchecked Sendable {
    private var current: Date
    private let lock = NSLock()
    init(_ start: Date = Date(timeIntervalSince1970: 1_800_000_000)) { current = start }
    var now: Date { lock.lock(); defer { lock.unlock() }; return current }
    func advance(_ seconds: Double) { lock.lock(); current += seconds; lock.unlock() }
    var function: @Sendable () -> Date { { self.now } }
}

func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

/// Deterministic, compressible text of `count` bytes.
func sampleText(_ seed: Int, count: Int) -> [UInt8] {
    var out: [UInt8] = []
    var i = seed
    while out.count < count {
        out += Array("function module\(i % 97)() { return \"value-\(i % 13)\" + render(\(i)); }\n".utf8)
        i += 1
    }
    return Array(out.prefix(count))
}

func memoryClient(_ clock: TestClock, limits: ClientStoreLimits = ClientStoreLimits()) throws -> DictionaryClient {
    DictionaryClient(store: try ClientDictionaryStore(location: .memory, limits: limits), decoders: .systemLibraries, now: clock.function)
}

/// Fetches `url` "from a server" answering `body` with `responseFields`, through the client.
@discardableResult
func register(
    _ client: DictionaryClient, url: String, body: [UInt8], useAsDictionary: String,
    cacheControl: String = "max-age=3600", partition: String = "", extra: [(String, String)] = []
) throws -> ProcessedResponse {
    let request = try client.prepare(url: url, partition: partition)
    var f = fields(("use-as-dictionary", useAsDictionary), ("cache-control", cacheControl))
    for (n, v) in extra { f.append(HTTPField(name: HTTPField.Name(n)!, value: v)) }
    return try client.process(ClientResponse(status: 200, fields: f, body: body), for: request)
}

extension ProcessedResponse {
    var registeredEntry: StoredDictionary? {
        if case .registered(let e, _) = registration { return e }
        return nil
    }
    var rejection: String? {
        if case .rejected(let r) = registration { return r }
        return nil
    }
}

/// The test encoders take DictionaryCodec's prepared dictionary; the client hands out its bytes.
extension ContentCoding {
    func encode(_ input: [UInt8], dictionary: DictionaryBytes, level: Int) throws -> [UInt8] {
        try encode(input, dictionary: CompressionDictionary(bytes: dictionary.bytes), level: level)
    }
}

extension DCZ {
    static func encode(_ input: [UInt8], dictionary: DictionaryBytes, level: Int) throws -> [UInt8] {
        try encode(input, dictionary: CompressionDictionary(bytes: dictionary.bytes), level: level)
    }
}

extension DCB {
    static func encode(_ input: [UInt8], dictionary: DictionaryBytes, level: Int) throws -> [UInt8] {
        try encode(input, dictionary: CompressionDictionary(bytes: dictionary.bytes), level: level)
    }
}

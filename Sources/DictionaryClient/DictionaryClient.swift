import DictionaryCodecTypes
import DictionaryTransportFields
import Foundation
import HTTPFieldValues
import HTTPTypes

/// The client half of RFC 9842, independent of any transport: ``prepare(url:destination:partition:fields:)``
/// decorates a request (one `Available-Dictionary`, `Dictionary-ID`, the dictionary codings its
/// decoders handle in `Accept-Encoding`), ``process(_:for:)`` decodes the response against the
/// dictionary named, registers any dictionary the response carries and measures the exchange.
/// Transports (``DictionaryHTTPSession``, the AsyncHTTPClient and URLSession adapters) wrap it.
///
/// Accounts: the `partition` of each call separates accounts (dictionaries never cross partitions);
/// ``clear(account:)`` forgets one account's dictionaries, e.g. on logout.
///
/// Thread-safety: `Sendable`; every method may be called concurrently from any thread (state lives in
/// the ``ClientDictionaryStore``, which serialises access). The `async` variants do the same work and
/// suit Swift concurrency callers. Lifetime: a prepared request holds its dictionary's bytes, so a
/// response can be decoded even if the store evicts the dictionary meanwhile.
public final class DictionaryClient: Sendable {
    public let store: ClientDictionaryStore
    /// Largest decoded response body accepted (decompression-bomb guard).
    public let maxDecodedBytes: Int
    /// The decoders; they decide what `Accept-Encoding` offers.
    public let decoders: ResponseDecoders
    /// Optional background fetching of `Link: rel="compression-dictionary"`.
    public let linkQueue: DictionaryLinkQueue?
    private let now: @Sendable () -> Date

    public init(
        store: ClientDictionaryStore, decoders: ResponseDecoders = .portable, maxDecodedBytes: Int = 256 << 20,
        linkQueue: DictionaryLinkQueue? = nil, now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.store = store
        self.decoders = decoders
        self.maxDecodedBytes = maxDecodedBytes
        self.linkQueue = linkQueue
        self.now = now
    }

    /// `Accept-Encoding` sent when the caller gives none: the decoders' plain codings (dcb/dcz are
    /// added only when a dictionary is named).
    public var defaultAcceptEncoding: String { decoders.plainCodings.map(\.rawValue).joined(separator: ", ") }

    /// Forgets every dictionary of `account` (the partition its requests used), e.g. on logout.
    public func clear(account: String) throws(DictionaryClientError) {
        try store.clear(partition: account)
    }

    // MARK: - Requests

    /// Decorates `fields` for a request to `url`. `destination` is the Fetch destination (`""` for an
    /// API call, `document`, `script`, …); `partition` separates accounts. Caller-supplied
    /// `Available-Dictionary` / `Dictionary-ID` fields are replaced; from a caller-supplied
    /// `Accept-Encoding`, codings no decoder handles (and `*`) are removed, and `dcb`/`dcz` too unless a
    /// dictionary is named.
    public func prepare(
        url: String, destination: String = "", partition: String = "", fields: HTTPFields = HTTPFields()
    ) throws(DictionaryClientError) -> PreparedDictionaryRequest {
        try prepareNow(url: url, destination: destination, partition: partition, fields: fields)
    }

    private func prepareNow(
        url: String, destination: String, partition: String, fields: HTTPFields
    ) throws(DictionaryClientError) -> PreparedDictionaryRequest {
        guard let target = ClientRequestTarget(url: url) else { throw .invalidURL(url) }
        var out = fields
        out[.availableDictionary] = nil
        out[.dictionaryID] = nil
        let given = out[values: .acceptEncoding].joined(separator: ", ")
        let plain = Set(decoders.plainCodings)
        var tokens = (given.isEmpty ? defaultAcceptEncoding : given).fieldMembers(separatedBy: ",")
            .filter { token in
                let name = (token.fieldPair(separatedBy: ";", omittingEmpty: false).first ?? "").lowercased()
                guard !token.isEmpty else { return false }
                if name == "identity" { return true }
                return ContentCoding(token: name).map(plain.contains) ?? false
            }.map(String.init)
        var chosen: DictionarySelector.Choice?
        var dictionary: DictionaryBytes?
        var reason: String
        if !target.isSecureContext {
            reason = "no dictionary: \(target.origin) is not a secure context (HTTPS or loopback only)"
        } else if decoders.dictionaryCodings.isEmpty {
            reason = "no dictionary: no decoder for dcb or dcz"
        } else {
            let date = now()
            var entries = store.entries(partition: partition)
            reason = "no dictionary: none of \(entries.count) stored for this partition matches"
            // A stored dictionary that fails its hash check is removed; try the next best.
            while let choice = DictionarySelector.select(from: entries, target: target, destination: destination, now: date) {
                do {
                    dictionary = try store.dictionary(for: choice.dictionary)
                    chosen = choice
                    reason = choice.reason
                    store.touch(choice.dictionary.key, at: date)
                    break
                } catch {
                    entries.removeAll { $0.key == choice.dictionary.key }
                    reason = "no dictionary: \(error)"
                }
            }
        }
        if let chosen, let dictionary, !decoders.dictionaryCodings.isEmpty {
            out[.availableDictionary] = AvailableDictionary(hash: dictionary.hash).fieldValue
            if let id = chosen.dictionary.id, let parsed = DictionaryID(id), !id.isEmpty {
                out[.dictionaryID] = parsed.fieldValue
            }
            tokens += decoders.dictionaryCodings.map(\.rawValue)
        }
        // Nothing decodable left: say identity outright (an empty value means the same, less plainly).
        out[.acceptEncoding] = tokens.isEmpty ? "identity" : tokens.joined(separator: ", ")
        return PreparedDictionaryRequest(
            target: target, destination: destination, partition: partition, fields: out,
            dictionary: dictionary, chosen: chosen?.dictionary, reason: reason,
            candidateCount: chosen?.candidateCount ?? 0)
    }

    public func prepare(
        url: String, destination: String = "", partition: String = "", fields: HTTPFields = HTTPFields()
    ) async throws(DictionaryClientError) -> PreparedDictionaryRequest {
        try prepareNow(url: url, destination: destination, partition: partition, fields: fields)
    }

    // MARK: - Responses

    /// Decodes `response` (undoing every content coding; dcb/dcz only against the dictionary `request`
    /// named), registers the dictionary the response carries if it qualifies, and collects (and, with a
    /// ``linkQueue``, schedules) `Link: rel="compression-dictionary"` fetches. Throws on any decoding
    /// problem: the response must then be dropped (RFC 9842 §9.3).
    public func process(
        _ response: ClientResponse, for request: PreparedDictionaryRequest
    ) throws(DictionaryClientError) -> ProcessedResponse {
        try processNow(response, for: request)
    }

    private func processNow(
        _ response: ClientResponse, for request: PreparedDictionaryRequest
    ) throws(DictionaryClientError) -> ProcessedResponse {
        let codings = ResponseBodyDecoder.codings(response.fields)
        let clock = ContinuousClock()
        let started = clock.now
        let body = try ResponseBodyDecoder.decode(
            response.body, codings: codings, advertised: request.dictionary, decoders: decoders, maxOutput: maxDecodedBytes)
        let decodeDuration = codings.isEmpty ? .zero : clock.now - started
        let date = now()
        var registration: RegistrationResult?
        switch DictionaryRegistrar.evaluate(
            target: request.target, partition: request.partition, status: response.status,
            fields: response.fields, decodedBody: body, now: date)
        {
        case .notADictionary: registration = nil
        case .rejected(let reason): registration = .rejected(reason)
        case .accepted(let entry):
            do {
                let evicted = try store.insert(entry, body: body)
                registration = .registered(entry, evicted: evicted)
            } catch { registration = .rejected(error.description) }
        }
        var links: [ClientRequestTarget] = []
        if request.target.isSecureContext {
            for reference in CompressionDictionaryLink.references(in: response.fields[values: .link]) {
                guard let target = request.target.resolve(reference), target.origin == request.target.origin,
                      !links.contains(target) else { continue }
                links.append(target)
            }
        }
        if let linkQueue {
            for link in links { linkQueue.enqueue(link, partition: request.partition) }
        }
        let usedDictionary = codings.contains { ContentCoding(token: $0)?.usesDictionary == true } ? request.dictionary?.hash : nil
        let use: DictionaryUse
        if let usedDictionary { use = .used(hash: usedDictionary, id: request.chosen?.id) }
        else if let offered = request.dictionary { use = .notUsedByServer(offered: offered.hash) }
        else { use = .notOffered(reason: request.reason) }
        let measurement = ResponseMeasurement(
            wireBytes: response.body.count, decodedBytes: body.count, contentCodings: codings, dictionary: use,
            decodeDuration: decodeDuration)
        return ProcessedResponse(
            status: response.status, fields: response.fields, body: body, wireByteCount: response.body.count,
            contentCodings: codings, decodedWith: usedDictionary, registration: registration, dictionaryLinks: links,
            measurement: measurement)
    }

    public func process(
        _ response: ClientResponse, for request: PreparedDictionaryRequest
    ) async throws(DictionaryClientError) -> ProcessedResponse {
        try processNow(response, for: request)
    }
}

/// A request decorated by ``DictionaryClient/prepare(url:destination:partition:fields:)``. Holds the
/// named dictionary's verified bytes until the response is processed. Immutable; thread-safe.
public struct PreparedDictionaryRequest: Sendable {
    public let target: ClientRequestTarget
    public let destination: String
    public let partition: String
    /// The fields to send (the caller's, plus Available-Dictionary, Dictionary-ID, Accept-Encoding).
    public let fields: HTTPFields
    /// The dictionary named in `Available-Dictionary`, nil when none.
    public let dictionary: DictionaryBytes?
    public let chosen: StoredDictionary?
    /// Why this dictionary (or none) was named.
    public let reason: String
    public let candidateCount: Int
}

/// A complete response as received: status, fields, the body as on the wire (content codings intact,
/// transfer coding removed).
public struct ClientResponse: Sendable {
    public var status: Int
    public var fields: HTTPFields
    public var body: [UInt8]

    public init(status: Int, fields: HTTPFields, body: [UInt8]) {
        self.status = status
        self.fields = fields
        self.body = body
    }
}

/// What became of a `Use-As-Dictionary` response.
public enum RegistrationResult: Sendable, Hashable {
    case registered(StoredDictionary, evicted: [StoredDictionary])
    case rejected(String)
}

/// The outcome of ``DictionaryClient/process(_:for:)``.
public struct ProcessedResponse: Sendable {
    public let status: Int
    public let fields: HTTPFields
    /// The decoded body.
    public let body: [UInt8]
    /// Bytes received (content-coded).
    public let wireByteCount: Int
    /// `Content-Encoding` tokens, in the order applied.
    public let contentCodings: [String]
    /// The dictionary a dcb/dcz body was decoded with.
    public let decodedWith: DictionaryHash?
    /// Nil when the response carried no `Use-As-Dictionary`.
    public let registration: RegistrationResult?
    /// Same-origin `Link: rel="compression-dictionary"` targets (already queued when the client has a
    /// link queue).
    public let dictionaryLinks: [ClientRequestTarget]
    /// Wire and decoded sizes, the dictionary used (or why none), decode time.
    public let measurement: ResponseMeasurement
}

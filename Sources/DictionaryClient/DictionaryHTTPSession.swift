import DictionaryTransportFields
import HTTPTypes

/// A ``DictionaryClient`` joined to a ``DictionaryHTTPTransport``: one call decorates a request,
/// sends it, decodes the response, registers any dictionary it carries and fetches
/// `Link: rel="compression-dictionary"` dictionaries in the background with the app's credentials.
/// The AsyncHTTPClient and URLSession adapters are built on it.
///
/// Accounts: every call names the account (the store partition) it is made for; link fetches run for
/// that account with the credentials ``linkCredentials`` returns for the dictionary's origin and that
/// account (e.g. its `Authorization`), and register into that account's partition.
///
/// Thread-safety: `Sendable`; calls may run concurrently. Link fetches are bounded
/// (``DictionaryLinkQueue``: a few at a time, excess dropped, failures counted, never retried).
public final class DictionaryHTTPSession: Sendable {
    /// Fields to add to a link dictionary fetch for (origin `scheme://host[:port]`, account).
    public typealias LinkCredentials = @Sendable (_ origin: String, _ account: String) async -> HTTPFields

    public let client: DictionaryClient
    public let transport: any DictionaryHTTPTransport
    /// Background fetches of `Link`-announced dictionaries.
    public let linkQueue: DictionaryLinkQueue

    /// - Parameter linkCredentials: called before each link fetch; returns nothing by default (a link
    ///   to a dictionary behind authentication then fails with the server's 401, counted, not retried).
    public init(
        client: DictionaryClient, transport: any DictionaryHTTPTransport,
        linkCredentials: @escaping LinkCredentials = { _, _ in HTTPFields() }, maxPendingLinkFetches: Int = 8
    ) {
        self.client = client
        self.transport = transport
        linkQueue = DictionaryLinkQueue(
            fetcher: CredentialedLinkFetcher(client: client, transport: transport, credentials: linkCredentials),
            maxPending: maxPendingLinkFetches)
    }

    /// Sends `request` for `account`: decorated by the client, then decoded, registered, measured.
    /// Throws the transport's errors, ``DictionaryClientError/invalidURL(_:)`` for a request without
    /// scheme, authority or path, and the client's decoding errors (the response is then dropped,
    /// RFC 9842 §9.3).
    public func send(
        _ request: HTTPRequest, body: [UInt8]? = nil, destination: String = "", account: String = ""
    ) async throws -> ProcessedResponse {
        guard let url = request.absoluteURLString else { throw DictionaryClientError.invalidURL("\(request)") }
        let prepared = try await client.prepare(url: url, destination: destination, partition: account, fields: request.headerFields)
        var decorated = request
        decorated.headerFields = prepared.fields
        let response = try await transport.send(decorated, body: body)
        let processed = try await client.process(response, for: prepared)
        if client.linkQueue == nil {
            for link in processed.dictionaryLinks { linkQueue.enqueue(link, partition: account) }
        }
        return processed
    }

    /// Waits until every queued link fetch has finished (tests, app shutdown).
    public func waitForDictionaryFetches() async { await linkQueue.drain() }
}

/// Fetches a linked dictionary for one account with that account's credentials and registers it.
struct CredentialedLinkFetcher: DictionaryLinkFetcher {
    let client: DictionaryClient
    let transport: any DictionaryHTTPTransport
    let credentials: DictionaryHTTPSession.LinkCredentials

    func fetchDictionary(_ target: ClientRequestTarget, partition: String) async throws {
        let fields = await credentials(target.origin, partition)
        let prepared = try await client.prepare(url: target.description, destination: "", partition: partition, fields: fields)
        let request = HTTPRequest(method: .get, scheme: target.scheme, authority: target.authority,
                                  path: target.pathAndQuery, headerFields: prepared.fields)
        let response = try await transport.send(request, body: nil)
        let processed = try await client.process(response, for: prepared)
        switch processed.registration {
        case .registered?: return
        case .rejected(let reason)?: throw LinkedDictionaryNotRegistered(target: target, reason: reason)
        case nil: throw LinkedDictionaryNotRegistered(target: target, reason: "status \(processed.status), no Use-As-Dictionary")
        }
    }
}

/// A linked dictionary's response did not register (counted as a failed link fetch).
public struct LinkedDictionaryNotRegistered: Error, CustomStringConvertible {
    public let target: ClientRequestTarget
    public let reason: String
    public var description: String { "linked dictionary \(target) not registered: \(reason)" }
}

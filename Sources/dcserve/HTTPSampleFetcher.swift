import DictionaryClient
import DictionaryCodec
import HTTPTypes

/// Fetches training samples from a running origin (`dcserve train --urls FILE`).
///
/// The file lists one absolute `http://` or `https://` URL per line (blank lines and `#` comments
/// ignored). Each URL is fetched with dcserve's own event-loop `HTTPClient` (through
/// ``HTTPClientFetchTransport``: its strict, fuzzed response parser; TLS verified against the system
/// store) — `GET`, `Accept-Encoding: identity`, `timeoutSeconds` connect/send/read timeouts, bodies up to
/// 32 MiB. Redirects are not followed. Any failure (bad URL, unreachable host, timeout, non-2xx status,
/// an encoded body) is an error naming the URL: nothing is trained on a partial set. Sequential; a value
/// used by one command.
struct HTTPSampleFetcher {
    static let maxBodyBytes = 32 << 20
    var timeoutSeconds = 10

    func fetchAll(listFile: String) throws -> [TrainingSample] {
        let text = String(decoding: try CLIFile.read(listFile), as: UTF8.self)
        let urls = text.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty && !$0.hasPrefix("#") }
        var samples: [TrainingSample] = []
        for url in urls { samples.append(TrainingSample(name: url, bytes: try fetch(url))) }
        return samples
    }

    func fetch(_ url: String) throws -> [UInt8] {
        guard let target = ClientRequestTarget(url: url) else {
            throw CLIError("\(url): not a valid http:// or https:// URL")
        }
        let transport = HTTPClientFetchTransport(timeoutSeconds: timeoutSeconds)
        let fields: HTTPFields = [.acceptEncoding: "identity", .userAgent: "dcserve-train"]
        let response = try transport.get(target, fields: fields, maxBodyBytes: Self.maxBodyBytes)  // errors name the URL
        guard (200..<300).contains(response.status) else {
            throw CLIError("\(url): HTTP \(response.status) \(response.reason)")
        }
        if let coding = response.fields[.contentEncoding], coding.lowercased() != "identity" {
            throw CLIError("\(url): the response is \(coding)-encoded although identity was asked for")
        }
        return response.body
    }
}

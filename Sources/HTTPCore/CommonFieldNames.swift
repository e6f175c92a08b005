#if canImport(Glibc)
import Glibc
#endif
import HTTPTypes

/// Prebuilt `HTTPField.Name`s and methods for what clients and servers send most, so turning a parsed
/// request (HTTPServer) or response (HTTPClient, the proxy) into HTTPTypes does not make, validate
/// and lower-case a new String for each of them.
///
/// A name is reused only when the message's bytes equal one of the stored spellings exactly (each
/// name is stored in Title-Case and in lower case), so the resulting field keeps the `rawName` the
/// peer sent; anything else goes through `HTTPField.Name(_:)` as before. Immutable after
/// initialisation; thread-safe.
package enum CommonFieldNames {
    private static let titleCase = [
        "Host", "User-Agent", "Accept", "Accept-Encoding", "Accept-Language", "Connection", "Cache-Control",
        "Pragma", "If-None-Match", "If-Modified-Since", "If-Match", "If-Unmodified-Since", "If-Range", "Range",
        "Cookie", "Referer", "Origin", "Authorization", "Content-Length", "Content-Type", "Transfer-Encoding",
        "Expect", "Upgrade", "Upgrade-Insecure-Requests", "Priority", "DNT", "TE", "Via", "Forwarded",
        "X-Forwarded-For", "X-Forwarded-Proto", "X-Forwarded-Host", "X-Real-IP", "X-Requested-With",
        "Sec-Fetch-Site", "Sec-Fetch-Mode", "Sec-Fetch-Dest", "Sec-Fetch-User", "Sec-CH-UA", "Sec-CH-UA-Mobile",
        "Sec-CH-UA-Platform", "Available-Dictionary", "Dictionary-ID", "Keep-Alive",
        // Response fields (upstream responses).
        "Date", "Server", "Last-Modified", "ETag", "Etag", "Accept-Ranges", "Expires", "Vary", "Set-Cookie",
        "Content-Encoding", "Location", "Age", "Link", "Access-Control-Allow-Origin", "X-Content-Type-Options",
        "Strict-Transport-Security", "Use-As-Dictionary", "Content-Security-Policy", "X-Frame-Options",
    ]

    private struct Entry {
        let bytes: [UInt8]
        let name: HTTPField.Name
    }

    /// Entries by name length (every name above is shorter than 32 bytes).
    private static let byLength: [[Entry]] = {
        var table = [[Entry]](repeating: [], count: 32)
        for spelling in titleCase + titleCase.map { $0.lowercased() } {
            guard let name = HTTPField.Name(spelling) else { preconditionFailure("not a token: \(spelling)") }
            let bytes = Array(spelling.utf8)
            if !table[bytes.count].contains(where: { $0.bytes == bytes }) { table[bytes.count].append(Entry(bytes: bytes, name: name)) }
        }
        return table
    }()

    /// The prebuilt name spelled exactly `bytes`, if there is one.
    package static func name(_ bytes: UnsafeBufferPointer<UInt8>) -> HTTPField.Name? {
        guard bytes.count < byLength.count else { return nil }
        guard let start = bytes.baseAddress else { return nil }
        for entry in byLength[bytes.count] where entry.bytes.withUnsafeBufferPointer({ memcmp($0.baseAddress!, start, bytes.count) == 0 }) {
            return entry.name
        }
        return nil
    }

    /// The method spelled exactly `bytes` when it is one of the common ones (methods are
    /// case-sensitive: `get` is not `GET`).
    package static func method(_ bytes: UnsafeBufferPointer<UInt8>) -> HTTPRequest.Method? {
        switch bytes.count {
        case 3:
            if bytes.elementsEqual("GET".utf8) { return .get }
            if bytes.elementsEqual("PUT".utf8) { return .put }
        case 4:
            if bytes.elementsEqual("HEAD".utf8) { return .head }
            if bytes.elementsEqual("POST".utf8) { return .post }
        case 5:
            if bytes.elementsEqual("PATCH".utf8) { return .patch }
        case 6:
            if bytes.elementsEqual("DELETE".utf8) { return .delete }
        case 7:
            if bytes.elementsEqual("OPTIONS".utf8) { return .options }
        default:
            break
        }
        return nil
    }
}

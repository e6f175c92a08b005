import Foundation

/// One request and its recorded response, from a HAR entry. Pure value; thread-safe.
public struct RecordedExchange: Sendable {
    /// How the response body was recorded.
    public enum Body: Sendable, Equatable {
        /// `content.text` as recorded (the decoded body, content codings removed).
        case text([UInt8])
        /// `content.text` decoded from base64 (`content.encoding: "base64"`, binary content).
        case base64([UInt8])
        /// Not in the file; the reason says why. Such an exchange is not replayed.
        case missing(String)

        /// The bytes, when recorded.
        public var bytes: [UInt8]? {
            switch self {
            case .text(let b), .base64(let b): b
            case .missing: nil
            }
        }
    }

    /// Position in the file's `log.entries` (0-based).
    public var index: Int
    public var started: Date
    public var method: String
    public var url: String
    /// `scheme://host[:port]` of `url`, lower-cased.
    public var origin: String
    /// Path and query of `url` (`/` when empty).
    public var pathAndQuery: String
    public var requestFields: [(name: String, value: String)]
    public var requestBody: [UInt8]
    public var status: Int
    public var statusText: String
    public var responseFields: [(name: String, value: String)]
    public var body: Body

    /// The path without the query.
    public var path: String { String(pathAndQuery.prefix { $0 != "?" }) }

    /// The first request field named `name` (case-insensitive).
    public func requestField(_ name: String) -> String? {
        requestFields.first { $0.name.caseInsensitiveCompare(name) == .orderedSame }?.value
    }

    init(harEntry entry: [String: Any], index: Int) throws(HTTPArchiveError) {
        self.index = index
        guard let startedText = entry["startedDateTime"] as? String else { throw .invalidEntry(index, "no startedDateTime") }
        guard let started = ISO8601Time.parse(startedText) else {
            throw .invalidEntry(index, "startedDateTime \(startedText.debugDescription) is not an ISO 8601 date")
        }
        self.started = started
        guard let request = entry["request"] as? [String: Any] else { throw .invalidEntry(index, "no request object") }
        guard let response = entry["response"] as? [String: Any] else { throw .invalidEntry(index, "no response object") }
        guard let method = request["method"] as? String, !method.isEmpty else { throw .invalidEntry(index, "no request.method") }
        guard let url = request["url"] as? String, let components = URLComponents(string: url),
              let scheme = components.scheme?.lowercased(), let host = components.host, !host.isEmpty else {
            throw .invalidEntry(index, "request.url is not an absolute URL")
        }
        self.method = method.uppercased()
        self.url = url
        origin = "\(scheme)://\(host.lowercased())" + (components.port.map { ":\($0)" } ?? "")
        let path = components.percentEncodedPath.isEmpty ? "/" : components.percentEncodedPath
        pathAndQuery = path + (components.percentEncodedQuery.map { "?\($0)" } ?? "")
        requestFields = Self.fields(request["headers"])
        requestBody = ((request["postData"] as? [String: Any])?["text"] as? String).map { Array($0.utf8) } ?? []
        guard let status = Self.integer(response["status"]) else { throw .invalidEntry(index, "no response.status") }
        self.status = status
        statusText = response["statusText"] as? String ?? ""
        responseFields = Self.fields(response["headers"])
        guard let content = response["content"] as? [String: Any] else { throw .invalidEntry(index, "no response.content object") }
        body = Self.body(content, status: status, method: self.method)
    }

    /// A JSON number as an integer (JSONSerialization may give Int, Double or NSNumber).
    static func integer(_ value: Any?) -> Int? {
        if let i = value as? Int { return i }
        if let d = value as? Double, d.isFinite, abs(d) < 1e15 { return Int(d) }
        return nil
    }

    static func fields(_ value: Any?) -> [(name: String, value: String)] {
        guard let list = value as? [[String: Any]] else { return [] }
        return list.compactMap { item in
            guard let name = item["name"] as? String, let value = item["value"] as? String else { return nil }
            return (name, value)
        }
    }

    static func body(_ content: [String: Any], status: Int, method: String) -> Body {
        let size = integer(content["size"]) ?? -1
        guard let text = content["text"] as? String else {
            if size == 0 || method == "HEAD" || status == 204 || status == 304 || (100..<200).contains(status) {
                return .text([])
            }
            return .missing(size > 0 ? "body not captured (content.size \(size), no content.text)" : "body not captured (no content.text)")
        }
        if (content["encoding"] as? String)?.lowercased() == "base64" {
            guard let data = Data(base64Encoded: text, options: [.ignoreUnknownCharacters]) else {
                return .missing("content.text is marked base64 but does not decode")
            }
            return .base64([UInt8](data))
        }
        if let encoding = content["encoding"] as? String, !encoding.isEmpty {
            return .missing("content.encoding \(encoding.debugDescription) is not supported (only base64)")
        }
        return .text(Array(text.utf8))
    }
}

/// ISO 8601 / RFC 3339 date-times as HAR writers emit them: `2026-11-27T10:00:00Z`,
/// `…:00.123Z`, `…:00.123456+01:00`. Pure.
enum ISO8601Time {
    static func parse(_ text: String) -> Date? {
        let s = Array(text.utf8)
        func number(_ range: Range<Int>) -> Int? {
            guard range.upperBound <= s.count else { return nil }
            var n = 0
            for i in range {
                guard s[i] >= 0x30, s[i] <= 0x39 else { return nil }
                n = n * 10 + Int(s[i] - 0x30)
            }
            return n
        }
        guard s.count >= 19, let year = number(0..<4), s[4] == 0x2D, let month = number(5..<7), s[7] == 0x2D,
              let day = number(8..<10), s[10] == UInt8(ascii: "T") || s[10] == 0x20, let hour = number(11..<13), s[13] == 0x3A,
              let minute = number(14..<16), s[16] == 0x3A, let second = number(17..<19) else { return nil }
        var i = 19
        var fraction = 0.0
        if i < s.count, s[i] == UInt8(ascii: ".") {
            i += 1
            var scale = 0.1
            while i < s.count, s[i] >= 0x30, s[i] <= 0x39 { fraction += Double(s[i] - 0x30) * scale; scale /= 10; i += 1 }
        }
        var offset = 0
        if i < s.count {
            if s[i] == UInt8(ascii: "Z") || s[i] == UInt8(ascii: "z") {
                i += 1
            } else if s[i] == UInt8(ascii: "+") || s[i] == UInt8(ascii: "-") {
                let sign = s[i] == UInt8(ascii: "+") ? 1 : -1
                guard let h = number(i + 1..<i + 3) else { return nil }
                var m = 0
                var end = i + 3
                if end < s.count, s[end] == 0x3A { end += 1 }
                if end + 2 <= s.count, let mm = number(end..<end + 2) { m = mm; end += 2 }
                offset = sign * (h * 3600 + m * 60)
                i = end
            } else { return nil }
        }
        guard i == s.count else { return nil }
        var components = DateComponents()
        components.calendar = Calendar(identifier: .gregorian)
        components.timeZone = TimeZone(secondsFromGMT: 0)
        (components.year, components.month, components.day) = (year, month, day)
        (components.hour, components.minute, components.second) = (hour, minute, second)
        guard components.isValidDate, let date = components.date else { return nil }
        return date.addingTimeInterval(fraction - Double(offset))
    }
}

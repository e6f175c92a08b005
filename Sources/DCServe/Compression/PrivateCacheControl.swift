import DictionaryTransport

/// `Cache-Control: private` for responses that depend on who asks.
extension DictionaryCompressionMiddleware {
    /// `value` with the `private` directive (added first when missing; a `public` directive, which
    /// would contradict it, is dropped).
    static func privately(_ value: String?) -> String {
        guard let value, !value.isEmpty else { return "private" }
        return privateValues.value(for: value) { value in
            if DictionaryCacheControl(value).isPrivate { return value }
            let members = value.fieldMembers(separatedBy: ",").filter { $0.lowercased() != "public" }
            return (["private"] + members.map(String.init)).joined(separator: ", ")
        }
    }

    /// ``privately(_:)`` per `Cache-Control` value, computed once per value: rules and upstreams repeat
    /// a few values on every response.
    static let privateValues = BoundedMemo<String, String>(capacity: 1024)
}

/// The endpoint group of a request path: the path with its identifier-like segments replaced by
/// `:id`, so `/api/chats/17/messages` and `/api/chats/18/messages` are one group
/// (`/api/chats/:id/messages`). An identifier is a segment of digits, a UUID, a hex string of at
/// least 8 characters, or a segment of at least 16 characters mixing letters and digits. The query
/// is not part of the group. Pure.
public enum EndpointGroup {
    public static func of(path: String) -> String {
        let pathOnly = path.prefix { $0 != "?" && $0 != "#" }
        let segments = pathOnly.split(separator: "/", omittingEmptySubsequences: false).map { segment in
            isIdentifier(segment) ? ":id" : String(segment)
        }
        let joined = segments.joined(separator: "/")
        return joined.isEmpty ? "/" : joined
    }

    static func isIdentifier(_ segment: Substring) -> Bool {
        guard !segment.isEmpty else { return false }
        let bytes = Array(segment.utf8)
        func isDigit(_ b: UInt8) -> Bool { b >= 0x30 && b <= 0x39 }
        func isHex(_ b: UInt8) -> Bool { isDigit(b) || (b >= 0x61 && b <= 0x66) || (b >= 0x41 && b <= 0x46) }
        func isLetter(_ b: UInt8) -> Bool { (b >= 0x61 && b <= 0x7A) || (b >= 0x41 && b <= 0x5A) }
        if bytes.allSatisfy(isDigit) { return true }
        if bytes.count == 36, bytes.enumerated().allSatisfy({ i, b in [8, 13, 18, 23].contains(i) ? b == 0x2D : isHex(b) }) { return true }
        if bytes.count >= 8, bytes.allSatisfy(isHex), bytes.contains(where: isDigit) { return true }
        if bytes.count >= 16, bytes.allSatisfy({ isDigit($0) || isLetter($0) || $0 == 0x2D || $0 == 0x5F }),
           bytes.contains(where: isDigit), bytes.contains(where: isLetter) { return true }
        return false
    }
}

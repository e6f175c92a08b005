/// The form of a request path that routes are matched against: percent-encoded unreserved
/// characters decoded (`%61` → `a`, RFC 3986 §2.3; other escapes, `%2F` included, stay as they are)
/// and dot segments removed (§5.2.4). So `/static/../api/x` and `/%61pi/x` are routed where the
/// server behind the route will resolve them (`/api/x`), never past a more specific prefix. Pure;
/// the request itself is forwarded unchanged.
enum RoutePath {
    /// nil when the dot segments climb above the root (`/../x`): no route may take such a path.
    static func normalized(_ path: Substring) -> String? {
        // The common case, without building anything: an absolute path with nothing to decode and no
        // dot segment ("/app.v1.js" has a dot but no dot segment) is its own normal form.
        let utf8 = path.utf8
        if utf8.first == UInt8(ascii: "/") && !utf8.contains(UInt8(ascii: "%")) && !hasDotSegment(utf8) {
            return String(path)
        }
        return normalizedByDecoding(path)
    }

    /// Whether a segment of `bytes` (split at "/") is "." or "..".
    static func hasDotSegment(_ bytes: Substring.UTF8View) -> Bool {
        var length = 0, dots = 0
        for b in bytes {
            if b == UInt8(ascii: "/") {
                if length > 0 && length == dots && length <= 2 { return true }
                length = 0
                dots = 0
            } else {
                length += 1
                if b == UInt8(ascii: ".") { dots += 1 }
            }
        }
        return length > 0 && length == dots && length <= 2
    }

    /// ``normalized(_:)`` the long way: decode, then remove dot segments (the reference for the fast path).
    static func normalizedByDecoding(_ path: Substring) -> String? {
        var decoded: [UInt8] = []
        decoded.reserveCapacity(path.utf8.count)
        var bytes = path.utf8[...]
        var sawDot = false
        while let b = bytes.first {
            bytes = bytes.dropFirst()
            if b == UInt8(ascii: "%"), bytes.count >= 2, let hi = hex(bytes.first!), let lo = hex(bytes.dropFirst().first!),
               isUnreserved(hi << 4 | lo) {
                decoded.append(hi << 4 | lo)
                bytes = bytes.dropFirst(2)
            } else {
                decoded.append(b)
            }
            if decoded.last == UInt8(ascii: ".") { sawDot = true }
        }
        guard sawDot else { return String(decoding: decoded, as: UTF8.self) }  // the common case: nothing to remove
        var segments: [ArraySlice<UInt8>] = []
        let parts = decoded.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false).dropFirst()  // before the leading "/"
        for (i, part) in parts.enumerated() {
            let last = i == parts.count - 1
            if part.elementsEqual([UInt8(ascii: ".")]) {
                if last { segments.append([]) }
            } else if part.elementsEqual([UInt8(ascii: "."), UInt8(ascii: ".")]) {
                guard !segments.isEmpty else { return nil }
                segments.removeLast()
                if last { segments.append([]) }
            } else {
                segments.append(part)
            }
        }
        return "/" + segments.map { String(decoding: $0, as: UTF8.self) }.joined(separator: "/")
    }

    /// The value of a hexadecimal digit; nil for any other byte.
    static func hex(_ b: UInt8) -> UInt8? {
        switch b {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): b - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): b - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): b - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    /// Whether `b` is an RFC 3986 unreserved character.
    static func isUnreserved(_ b: UInt8) -> Bool {
        switch b {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
             UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"): true
        default: false
        }
    }
}

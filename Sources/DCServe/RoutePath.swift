/// The form of a request path that routes are matched against: percent-encoded unreserved
/// characters decoded (`%61` → `a`, RFC 3986 §2.3; other escapes, `%2F` included, stay as they are)
/// and dot segments removed (§5.2.4). So `/static/../api/x` and `/%61pi/x` are routed where the
/// server behind the route will resolve them (`/api/x`), never past a more specific prefix. Pure;
/// the request itself is forwarded unchanged.
enum RoutePath {
    /// nil when the dot segments climb above the root (`/../x`): no route may take such a path.
    static func normalized(_ path: Substring) -> String? {
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
            switch Array(part) {
            case [UInt8(ascii: ".")]:
                if last { segments.append([]) }
            case [UInt8(ascii: "."), UInt8(ascii: ".")]:
                guard !segments.isEmpty else { return nil }
                segments.removeLast()
                if last { segments.append([]) }
            default:
                segments.append(part)
            }
        }
        return "/" + segments.map { String(decoding: $0, as: UTF8.self) }.joined(separator: "/")
    }

    private static func hex(_ b: UInt8) -> UInt8? {
        switch b {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): b - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): b - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): b - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    private static func isUnreserved(_ b: UInt8) -> Bool {
        switch b {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
             UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"): true
        default: false
        }
    }
}

/// Turns a request path into a safe list of segments below a document root.
///
/// Percent-decodes (malformed escapes are rejected), refuses NUL bytes, drops empty and "." segments,
/// resolves ".." without ever going above the root (a path that would is rejected), so the result
/// can only name something inside the root — symlinks are the file opener's concern.
public enum DocumentPath {
    public enum Failure: Error, Equatable {
        case malformedEscape
        case nulByte
        case escapesRoot
        case notOriginForm
    }

    /// Segments of `path` (without query), e.g. "/a/./b/../c%20d" → ["a", "c d"].
    /// Also reports whether the path named a directory (ends with "/" or is the root).
    public static func segments(of path: Substring) throws(Failure) -> (segments: [String], trailingSlash: Bool) {
        let raw = Array(path.utf8)
        guard raw.first == 0x2F else { throw .notOriginForm }
        var decoded: [UInt8] = []
        decoded.reserveCapacity(raw.count)
        var i = 0
        while i < raw.count {
            var b = raw[i]
            if b == 0x25 {
                guard i + 2 < raw.count, let hi = hexValue(raw[i + 1]), let lo = hexValue(raw[i + 2]) else {
                    throw .malformedEscape
                }
                b = UInt8(hi << 4 | lo)
                i += 3
            } else {
                i += 1
            }
            if b == 0 { throw .nulByte }
            decoded.append(b)
        }
        var result: [String] = []
        for part in decoded.split(separator: 0x2F, omittingEmptySubsequences: true) {
            if part.count == 1 && part.first == 0x2E { continue }
            if part.count == 2 && part.first == 0x2E && part.last == 0x2E {
                guard !result.isEmpty else { throw .escapesRoot }
                result.removeLast()
                continue
            }
            result.append(String(decoding: part, as: UTF8.self))
        }
        return (result, decoded.last == 0x2F)
    }
}

/// The index of the first occurrence of `needle` in `bytes` at or after `start`; nil when there is none
/// (for reading HTTP framing out of a transport's output in tests and fuzzers).
public func firstIndex(of needle: [UInt8], in bytes: [UInt8], from start: Int) -> Int? {
    guard !needle.isEmpty, bytes.count >= needle.count, start <= bytes.count - needle.count else { return nil }
    var i = max(start, 0)
    while i <= bytes.count - needle.count {
        if bytes[i] == needle[0] && bytes[i..<i + needle.count].elementsEqual(needle) { return i }
        i += 1
    }
    return nil
}

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Whether `bytes` equals `lowercase` (already lower-case ASCII) ignoring ASCII case: how field names
/// and case-insensitive tokens are compared on the wire (RFC 9110 §5.1). The one such comparison of the
/// package (the request and response parsers, the proxy's field filters). Pure.
@inlinable @inline(__always)
package func asciiCaseInsensitiveEquals<C: Collection<UInt8>>(_ bytes: C, _ lowercase: [UInt8]) -> Bool {
    guard bytes.count == lowercase.count else { return false }
    var i = 0
    for b in bytes {
        let l = (b >= 0x41 && b <= 0x5A) ? b | 0x20 : b
        if l != lowercase[i] { return false }
        i += 1
    }
    return true
}

/// ``asciiCaseInsensitiveEquals(_:_:)`` against lower-case bytes in memory (a `canonicalName`'s
/// UTF-8, a literal).
@inlinable @inline(__always)
package func asciiCaseInsensitiveEquals(_ bytes: UnsafeBufferPointer<UInt8>, _ lowercase: UnsafeBufferPointer<UInt8>) -> Bool {
    guard bytes.count == lowercase.count else { return false }
    for i in 0..<bytes.count {
        let b = bytes[i]
        if (b >= 0x41 && b <= 0x5A ? b | 0x20 : b) != lowercase[i] { return false }
    }
    return true
}

/// ``asciiCaseInsensitiveEquals(_:_:)`` against a lower-case ASCII literal.
@inlinable @inline(__always)
package func asciiCaseInsensitiveEquals(_ bytes: UnsafeBufferPointer<UInt8>, _ lowercase: StaticString) -> Bool {
    asciiCaseInsensitiveEquals(bytes, UnsafeBufferPointer(start: lowercase.utf8Start, count: lowercase.utf8CodeUnitCount))
}

/// ``asciiCaseInsensitiveEquals(_:_:)`` of raw bytes (a parser's view of its buffer) against a lower-case
/// ASCII literal: no array, no reference count, no lazy global.
@inlinable @inline(__always)
package func asciiCaseInsensitiveEquals(_ bytes: UnsafeRawBufferPointer, _ lowercase: StaticString) -> Bool {
    asciiCaseInsensitiveEquals(bytes.assumingMemoryBound(to: UInt8.self), lowercase)
}

extension Array where Element == UInt8 {
    /// Appends an ASCII literal's bytes (constant lines written into an output buffer).
    @inlinable @inline(__always)
    package mutating func append(_ literal: StaticString) {
        append(contentsOf: UnsafeBufferPointer(start: literal.utf8Start, count: literal.utf8CodeUnitCount))
    }
}

/// Character classes and small helpers of HTTP/1.1 syntax (RFC 9110 §5.6) used by the request and
/// response parsers. Pure functions, no state (no global tables: a global is a `swift_once` call on
/// every access, and these run once per byte of every head).
package enum HTTPFieldSyntax {
    /// tchar = "!" / "#" / "$" / "%" / "&" / "'" / "*" / "+" / "-" / "." / "^" / "_" / "`" / "|" / "~" / DIGIT / ALPHA,
    /// as a 128-bit set (bit n of the pair = byte n).
    @inline(__always) package static func isTokenByte(_ b: UInt8) -> Bool {
        let low: UInt64 = 0x03FF_6CFA_0000_0000   // ! # $ % & ' * + - . 0-9
        let high: UInt64 = 0x57FF_FFFF_C7FF_FFFE  // A-Z ^ _ ` a-z | ~
        return b < 64 ? (low >> UInt64(b)) & 1 != 0 : b < 128 && (high >> UInt64(b - 64)) & 1 != 0
    }

    @inline(__always) static func isDigit(_ b: UInt8) -> Bool { b >= 0x30 && b <= 0x39 }

    /// A control character other than HTAB (never allowed in field values or reason phrases).
    @inline(__always) static func isForbiddenControl(_ b: UInt8) -> Bool { (b < 0x20 && b != 0x09) || b == 0x7F }

    /// Calls `body` with each comma-separated element of a field value, OWS trimmed (empty elements
    /// included: callers decide whether they are allowed).
    static func forEachListElement<E: Error>(_ value: UnsafeRawBufferPointer,
                                             _ body: (UnsafeRawBufferPointer) throws(E) -> Void) throws(E) {
        var start = 0
        var i = 0
        while i <= value.count {
            if i == value.count || value[i] == 0x2C {
                var s = start, e = i
                while s < e && (value[s] == 0x20 || value[s] == 0x09) { s += 1 }
                while e > s && (value[e - 1] == 0x20 || value[e - 1] == 0x09) { e -= 1 }
                try body(UnsafeRawBufferPointer(rebasing: value[s..<e]))
                start = i + 1
            }
            i += 1
        }
    }

    /// Index of the first LF at or after `from`, or nil.
    @inline(__always)
    static func findLF(_ buffer: UnsafeRawBufferPointer, from: Int) -> Int? {
        guard from < buffer.count, let base = buffer.baseAddress else { return nil }
        guard let hit = memchr(base + from, 0x0A, buffer.count - from) else { return nil }
        return base.distance(to: UnsafeRawPointer(hit))
    }

    /// True when `range` of `buffer` holds a CR.
    @inline(__always)
    static func containsCR(_ buffer: UnsafeRawBufferPointer, _ range: Range<Int>) -> Bool {
        guard let base = buffer.baseAddress, !range.isEmpty else { return false }
        return memchr(base + range.lowerBound, 0x0D, range.count) != nil
    }
}

/// The chunked transfer coding (RFC 9112 §7.1), both directions: framing helpers for writers and the
/// chunk-size line rule for parsers (the request parser and the upstream response parser share it).
/// Pure functions, no state.
public enum ChunkedCoding {
    /// The last chunk with an empty trailer section: `0 CRLF CRLF`.
    public static let lastChunk: [UInt8] = Array("0\r\n\r\n".utf8)

    /// Appends one chunk (size line, data, CRLF). Empty `data` appends nothing (an empty chunk would
    /// end the body).
    @inlinable
    public static func appendChunk<C: Collection<UInt8>>(_ data: C, into buffer: inout [UInt8]) {
        guard !data.isEmpty else { return }
        appendChunkHeader(size: data.count, into: &buffer)
        buffer.append(contentsOf: data)
        buffer.append(0x0D); buffer.append(0x0A)
    }

    /// Appends the size line of a chunk of `size` (> 0) bytes; the caller appends the data and CRLF.
    @inlinable
    public static func appendChunkHeader(size: Int, into buffer: inout [UInt8]) {
        appendHex(size, into: &buffer)
        buffer.append(0x0D); buffer.append(0x0A)
    }

    /// Appends `value` (≥ 0) in lower-case hexadecimal without leading zeros.
    @inlinable
    public static func appendHex(_ value: Int, into buffer: inout [UInt8]) {
        var shift = (Int.bitWidth - value.leadingZeroBitCount + 3) / 4 * 4 - 4
        if shift < 0 { buffer.append(0x30); return }
        while shift >= 0 {
            let digit = UInt8((value >> shift) & 0xF)
            buffer.append(digit < 10 ? 0x30 + digit : 0x57 + digit)
            shift -= 4
        }
    }

    /// What a chunk-size line says.
    public enum SizeLine: Equatable, Sendable {
        case size(Int)
        /// No hex digits, or something other than BWS ";" after them.
        case invalidSize
        /// A control character in the chunk extensions.
        case invalidExtension
        /// The size does not fit in an `Int`.
        case tooLarge
    }

    /// Parses one chunk-size line without its CRLF: `chunk-size [ chunk-ext ]` where
    /// `chunk-ext = *( BWS ";" BWS ext-name [ BWS "=" BWS ext-val ] )`; extensions are accepted but
    /// ignored, control characters in them refused.
    public static func parseSizeLine(_ line: UnsafeRawBufferPointer) -> SizeLine {
        var i = 0
        var size = 0
        while i < line.count, let digit = hexDigitValue(line[i]) {
            guard size <= (Int.max >> 4) else { return .tooLarge }
            size = size << 4 | digit
            i += 1
        }
        guard i > 0 else { return .invalidSize }
        if i < line.count {
            var j = i
            while j < line.count && (line[j] == 0x20 || line[j] == 0x09) { j += 1 }
            guard j < line.count, line[j] == 0x3B else { return .invalidSize }
            while j < line.count {
                let b = line[j]
                if (b < 0x20 && b != 0x09) || b == 0x7F { return .invalidExtension }
                j += 1
            }
        }
        return .size(size)
    }

    @inline(__always)
    static func hexDigitValue(_ b: UInt8) -> Int? {
        switch b {
        case 0x30...0x39: return Int(b - 0x30)
        case 0x41...0x46: return Int(b - 0x41 + 10)
        case 0x61...0x66: return Int(b - 0x61 + 10)
        default: return nil
        }
    }
}

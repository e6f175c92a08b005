/// Why the pure-Swift decoder refused its input. Every refusal is one of these; hostile input never
/// traps.
public enum ZstdDecodeError: Error, Sendable, Equatable {
    /// The input ended inside a frame (or a header).
    case truncated
    /// A frame starts with neither the zstd magic nor a skippable-frame magic.
    case badMagic
    /// The frame header's reserved bit is set.
    case reservedBit
    /// The frame's window (or single-segment content size) exceeds the limit or the format's maximum.
    case windowTooLarge(windowBytes: UInt64, limit: Int)
    /// Decoding would produce more than `ZstdDecodeLimits.maxOutputBytes`.
    case outputTooLarge(limit: Int)
    /// The frame names a dictionary ID; a raw-content dictionary has none (ID 0).
    case dictionaryIDMismatch(frameDictionaryID: UInt32)
    /// The frame's content checksum (XXH64, low 32 bits) differs from the decoded bytes'.
    case checksumMismatch
    /// The frame declares a content size that differs from the decoded size.
    case contentSizeMismatch(declared: UInt64, decoded: Int)
    /// A block is larger, compressed or decoded, than the frame's maximum block size.
    case blockTooLarge
    /// A dcz body does not start with the dcz magic `5E 2A 4D 18 20 00 00 00`.
    case badDCZMagic
    /// The dcz header's SHA-256 differs from the dictionary's.
    case dictionaryHashMismatch
    /// Any other violation of RFC 8878 (or of what libzstd accepts), named by `detail`.
    case corrupt(String)
}

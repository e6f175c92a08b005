/// Dictionary-Compressed Zstandard bodies (RFC 9842 §5) decoded by `PureZstd`.
///
/// Thread-safety: stateless; calls may run concurrently.
public enum PureDCZ {
    /// The 8 bytes every dcz body starts with (a skippable-frame header of 32 bytes).
    public static let magic: [UInt8] = [0x5E, 0x2A, 0x4D, 0x18, 0x20, 0x00, 0x00, 0x00]
    /// Magic plus the dictionary's SHA-256.
    public static let headerLength = 40

    /// The window a client must accept for a dictionary of `dictionarySize` bytes (RFC 9842 §5):
    /// max(8 MiB, 1.25 × size), at most 128 MiB.
    public static let windowLimit: @Sendable (Int) -> Int = { dictionarySize in
        let size = max(0, dictionarySize)
        let scaled = size > Int.max / 2 ? Int.max : size + size / 4
        return min(128 << 20, max(8 << 20, scaled))
    }

    /// Checks the 40-byte header (magic, then `dictionaryHash`, the SHA-256 of `dictionary` the
    /// caller computed), then decodes the frames that follow with `dictionary` as raw content.
    /// - Throws: `.badDCZMagic` for a foreign header, `.truncated` for a header without a frame,
    ///   `.dictionaryHashMismatch`, or any error of `PureZstd.decompress`.
    public static func decode(_ body: [UInt8], dictionary: [UInt8], dictionaryHash: [UInt8], limits: ZstdDecodeLimits)
        throws(ZstdDecodeError) -> [UInt8]
    {
        let prefix = min(body.count, magic.count)
        guard body[0..<prefix].elementsEqual(magic[0..<prefix]) else { throw .badDCZMagic }
        guard body.count > headerLength else { throw .truncated }  // a header and at least one frame
        guard dictionaryHash.count == 32, body[8..<headerLength].elementsEqual(dictionaryHash) else {
            throw .dictionaryHashMismatch
        }
        return try body.withUnsafeBufferPointer { (bytes) throws(ZstdDecodeError) -> [UInt8] in
            try dictionary.withUnsafeBufferPointer { (dictionaryBytes) throws(ZstdDecodeError) -> [UInt8] in
                try PureZstd.decompress(
                    UnsafeBufferPointer(rebasing: bytes[headerLength...]), dictionary: dictionaryBytes, limits: limits)
            }
        }
    }
}

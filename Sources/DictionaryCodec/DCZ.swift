/// Dictionary-Compressed Zstandard (RFC 9842 §5): `5E 2A 4D 18 20 00 00 00` + SHA-256 of the
/// dictionary + one zstd frame compressed with the dictionary loaded as raw content, content checksum
/// on. The header is a zstd skippable frame, so `zstd -d -D dictionary` decodes the whole body.
///
/// Default levels: 3 on the fly, 19 precompressed (`ContentCoding.dcz.defaultLevel`).
public enum DCZ {
    public static let headerLength = 40

    /// The frame's window log for a dictionary of `dictionarySize` bytes:
    /// `min(27, max(23, floor(log2(1.25 × size))))` (RFC 9842 §5: clients accept max(8 MiB,
    /// 1.25 × size) up to 128 MiB), further capped by Chromium's decoder limit
    /// `max(23, ceil(log2(size)))`. Always in 23...27.
    public static func windowLog(dictionarySize: Int) -> Int {
        let rfc = min(27, max(23, floorLog2(dictionarySize + dictionarySize / 4)))
        let chromium = max(23, ceilLog2(dictionarySize))
        return min(rfc, chromium)
    }

    /// Compresses `input` into a complete dcz body (header included) at `level`.
    public static func encode(_ input: [UInt8], dictionary: CompressionDictionary, level: Int) throws -> [UInt8] {
        try input.withUnsafeBytes {
            try ZstdOneShot.compress($0, coding: .dcz, dictionary: dictionary, level: level)
        }
    }

    /// Decodes a complete dcz body made with `dictionary`.
    /// - Throws: `CodecError` — `.wrongMagic`, `.dictionaryHashMismatch`, `.truncated`,
    ///   `.trailingData`, `.windowTooLarge`, `.outputLimitExceeded`, `.corrupt`.
    public static func decode(
        _ body: [UInt8], dictionary: CompressionDictionary, maxOutput: Int, maxWindowLog: Int? = nil
    ) throws -> [UInt8] {
        try ContentCoding.dcz.decode(
            body, dictionary: dictionary, limits: DecodeLimits(maxOutput: maxOutput, maxWindowLog: maxWindowLog))
    }
}

/// Dictionary-Compressed Zstandard (RFC 9842 §5): `5E 2A 4D 18 20 00 00 00` + SHA-256 of the
/// dictionary + one zstd frame compressed with the dictionary loaded as raw content, content checksum
/// on. The header is a zstd skippable frame, so `zstd -d -D dictionary` decodes the whole body.
///
/// Default levels: 3 on the fly, 19 precompressed (`ContentCoding.dcz.defaultLevel`).
public enum DCZ {
    public static let headerLength = 40

    /// The frame's window log for a dictionary of `dictionarySize` bytes and, when known (one-shot
    /// encodes), a content of `contentSize` bytes. RFC 9842 §5: clients accept a window of
    /// `limit = max(8 MiB, 1.25 × dictionary size)`, up to 128 MiB; Chromium's decoder accepts
    /// `max(23, ceil(log2(size)))`.
    /// - A content that fits the limit makes a single-segment frame (its window is the content size,
    ///   within the limit), so the encoder may search the next power of 2 above the limit and reach the
    ///   whole dictionary: `min(27, ceil(log2(limit)), chromium)`. A 12 MB file against its previous
    ///   version then finds its matches 12 MB back instead of being capped at 8 MiB.
    /// - Otherwise (streamed, or larger content) the declared window must itself stay within the limit:
    ///   `min(27, max(23, floor(log2(limit))), chromium)`.
    /// Always in 23...27.
    public static func windowLog(dictionarySize: Int, contentSize: Int? = nil) -> Int {
        let limit = min(128 << 20, max(8 << 20, dictionarySize + dictionarySize / 4))
        let chromium = max(23, ceilLog2(dictionarySize))
        if let contentSize, contentSize <= limit {
            return min(27, max(23, ceilLog2(limit)), chromium)
        }
        return min(27, max(23, floorLog2(limit)), chromium)
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

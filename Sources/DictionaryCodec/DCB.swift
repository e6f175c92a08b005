/// Dictionary-Compressed Brotli (RFC 9842 §4): `FF 44 43 42` + SHA-256 of the dictionary + a brotli
/// stream compressed with the dictionary attached as a raw prefix. lgwin 24 (16 MiB), never
/// large-window; quality is clamped to 5...11 because brotli ignores an attached dictionary below 5.
///
/// Default levels: 5 on the fly, 11 precompressed (`ContentCoding.dcb.defaultLevel`).
public enum DCB {
    public static let headerLength = 36

    /// Compresses `input` into a complete dcb body (header included) at `level` (clamped to 5...11).
    public static func encode(_ input: [UInt8], dictionary: CompressionDictionary, level: Int) throws -> [UInt8] {
        let encoder = try BrotliEncoder(coding: .dcb, quality: level, dictionary: dictionary, inputSize: input.count)
        return try input.withUnsafeBytes { try encoder.compressWhole($0) }
    }

    /// Decodes a complete dcb body made with `dictionary`.
    /// - Throws: `CodecError` — `.wrongMagic`, `.dictionaryHashMismatch`, `.truncated`,
    ///   `.trailingData`, `.windowTooLarge`, `.outputLimitExceeded`, `.corrupt`.
    public static func decode(
        _ body: [UInt8], dictionary: CompressionDictionary, maxOutput: Int, maxWindowLog: Int? = nil
    ) throws -> [UInt8] {
        try ContentCoding.dcb.decode(
            body, dictionary: dictionary, limits: DecodeLimits(maxOutput: maxOutput, maxWindowLog: maxWindowLog))
    }
}

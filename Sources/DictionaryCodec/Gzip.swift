/// One-shot `gzip` (RFC 1952 via zlib).
public enum Gzip {
    /// Compresses `input` at `level` (0...9, default 6).
    public static func encode(_ input: [UInt8], level: Int) throws -> [UInt8] {
        let encoder = try GzipEncoder(level: level)
        return try input.withUnsafeBytes { try encoder.compressWhole($0) }
    }

    /// Decodes one gzip member.
    public static func decode(_ body: [UInt8], limits: DecodeLimits = .default) throws -> [UInt8] {
        try ContentCoding.gzip.decode(body, limits: limits)
    }
}

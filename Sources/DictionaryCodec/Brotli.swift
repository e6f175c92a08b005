/// One-shot plain `br` (RFC 7932), lgwin 22, never large-window.
public enum Brotli {
    /// Compresses `input` at quality `level` (default 5 on the fly, 11 precompressed).
    public static func encode(_ input: [UInt8], level: Int) throws -> [UInt8] {
        let encoder = try BrotliEncoder(coding: .br, quality: level, dictionary: nil, inputSize: input.count)
        return try input.withUnsafeBytes { try encoder.compressWhole($0) }
    }

    /// Decodes a complete br body.
    public static func decode(_ body: [UInt8], limits: DecodeLimits = .default) throws -> [UInt8] {
        try ContentCoding.br.decode(body, limits: limits)
    }
}

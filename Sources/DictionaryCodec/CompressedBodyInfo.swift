import CZstd

/// What can be read from a compressed body's headers without decoding it (for `dcserve inspect`
/// and tests): coding, dictionary hash, window and content size when the format records them.
public struct CompressedBodyInfo: Sendable, Hashable {
    public var coding: ContentCoding
    /// The dictionary named by a dcb/dcz header.
    public var dictionaryHash: DictionaryHash?
    /// Bytes the decoder must keep as history (zstd window descriptor / brotli `2^WBITS - 16` /
    /// gzip 32 KiB). For a zstd single-segment frame this is the content size.
    public var windowSize: UInt64?
    /// Decoded size when the format records it (zstd frame content size; gzip ISIZE, which is modulo 2^32).
    public var contentSize: UInt64?
    /// Whether a zstd frame carries a content checksum.
    public var hasChecksum: Bool?

    /// Inspects `body`. dcb, dcz, zstd and gzip are recognised by their magic; brotli has none, so a
    /// body that matches nothing is reported as `hint` when `hint` is `.br`.
    /// - Throws: `CodecError.truncated` for a header cut short, `.wrongMagic`/`.corrupt` when the body
    ///   is not recognisable.
    public static func inspect(_ body: [UInt8], hint: ContentCoding? = nil) throws -> CompressedBodyInfo {
        if let coding = DictionaryFrameHeader.detect(body) {
            let header = try DictionaryFrameHeader.parse(body)
            let rest = Array(body[header.length...])
            var info = coding == .dcz ? try zstdFrame(rest) : try brotliStream(rest)
            info.coding = coding
            info.dictionaryHash = header.hash
            return info
        }
        if body.starts(with: [0x28, 0xB5, 0x2F, 0xFD]) { return try zstdFrame(body) }
        if body.starts(with: [0x1F, 0x8B]) {
            guard body.count >= 18 else { throw CodecError.truncated }
            let n = body.count
            let isize = UInt64(body[n - 4]) | UInt64(body[n - 3]) << 8 | UInt64(body[n - 2]) << 16 | UInt64(body[n - 1]) << 24
            return CompressedBodyInfo(coding: .gzip, windowSize: 32 * 1024, contentSize: isize)
        }
        if hint == .br { return try brotliStream(body) }
        if let hint, hint.usesDictionary { throw CodecError.wrongMagic(expected: hint) }
        throw CodecError.corrupt("not a dcb, dcz, zstd or gzip body (brotli has no magic: pass the encoding)")
    }

    private static func zstdFrame(_ frame: [UInt8]) throws -> CompressedBodyInfo {
        var header = ZSTD_frameHeader()
        let result = frame.withUnsafeBytes { ZSTD_getFrameHeader(&header, $0.baseAddress, $0.count) }
        if ZSTD_isError(result) != 0 {
            throw CodecError.corrupt("zstd frame header: " + String(cString: ZSTD_getErrorName(result)))
        }
        if result > 0 { throw CodecError.truncated }
        let contentSize = header.frameContentSize == ZSTD_CONTENTSIZE_UNKNOWN ? nil : header.frameContentSize
        return CompressedBodyInfo(
            coding: .zstd, windowSize: header.windowSize, contentSize: contentSize,
            hasChecksum: header.checksumFlag != 0)
    }

    private static func brotliStream(_ stream: [UInt8]) throws -> CompressedBodyInfo {
        guard let first = stream.first else { throw CodecError.truncated }
        guard let bits = BrotliDecoder.windowBits(firstByte: first) else {
            throw CodecError.windowTooLarge(maxWindowLog: 24)
        }
        return CompressedBodyInfo(coding: .br, windowSize: UInt64(1) << UInt64(bits) - 16)
    }
}

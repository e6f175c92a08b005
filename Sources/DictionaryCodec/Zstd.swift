import CZstd

/// One-shot plain `zstd` (RFC 8878 / RFC 9659): checksum on, window ≤ 8 MiB.
public enum Zstd {
    /// Largest window dcserve's plain zstd output uses (8 MiB, what RFC 9659 decoders must support).
    public static let maxWindowLog = 23

    /// Compresses `input` as one zstd frame at `level` (default 3 on the fly, 19 precompressed).
    public static func encode(_ input: [UInt8], level: Int) throws -> [UInt8] {
        try input.withUnsafeBytes { try ZstdOneShot.compress($0, coding: .zstd, dictionary: nil, level: level) }
    }

    /// Decodes one zstd frame.
    public static func decode(_ body: [UInt8], limits: DecodeLimits = .default) throws -> [UInt8] {
        try ContentCoding.zstd.decode(body, limits: limits)
    }
}

/// Shared one-shot path for zstd and dcz: a pooled context, the header written in place, and
/// `ZSTD_compress2` into a scratch buffer of header + `ZSTD_compressBound` bytes, copied out at its
/// exact size (an array of that size, right-sized, when the bound exceeds the scratch buffers).
enum ZstdOneShot {
    static func compress(
        _ input: UnsafeRawBufferPointer, coding: ContentCoding, dictionary: CompressionDictionary?, level: Int
    ) throws -> [UInt8] {
        let pool = ZstdCompressionContextPool.shared
        let cctx = try pool.acquire()
        defer { pool.release(cctx) }
        // Decided once for the frame (another thread may build a CDict meanwhile).
        let asPrefix = dictionary.map { ZstdEncoder.usesPrefix($0, coding: coding, level: level, inputSize: input.count) } ?? false
        let prepared = try ZstdEncoder.configure(
            cctx, coding: coding, level: level, dictionary: dictionary, inputSize: input.count, asPrefix: asPrefix)
        let header = dictionary.map { DictionaryFrameHeader(coding: .dcz, hash: $0.hash).bytes } ?? []
        let bound = header.count + ZSTD_compressBound(input.count)
        /// Writes the frame (after `header`) into `base` (`bound` bytes); returns the bytes written.
        func encode(into base: UnsafeMutableRawPointer) throws -> Int {
            header.withUnsafeBytes { base.copyMemory(from: $0.baseAddress!, byteCount: $0.count) }
            if let dictionary, asPrefix {
                // Referenced for this frame only; the dictionary outlives the call.
                try zstdCheck(ZSTD_CCtx_refPrefix(cctx, dictionary.baseAddress, dictionary.count), "refPrefix")
            }
            let written = ZSTD_compress2(cctx, base + header.count, bound - header.count, input.baseAddress, input.count)
            try zstdCheck(written, "ZSTD_compress2")
            return header.count + written
        }
        defer {
            withExtendedLifetime(prepared) {}
            withExtendedLifetime(dictionary) {}
        }
        return try EncodeOutputScratch.shared.encodeExact(capacity: bound) { try encode(into: UnsafeMutableRawPointer($0)) }
    }
}

/// Returns `bytes`, copied into a right-sized array when its capacity (a compression bound) exceeds
/// the content by more than 25 % and 4 KiB, so long-lived caches do not hold the slack (a cached
/// 200-byte delta must not keep its input-sized bound). The copy is of the compressed bytes only.
func rightSized(_ bytes: [UInt8]) -> [UInt8] {
    let slack = bytes.capacity - bytes.count
    if slack > 4096 && slack > bytes.capacity / 4 {
        // A fresh buffer: `Array(bytes[...])` would hand back the same storage.
        return bytes.withUnsafeBufferPointer { [UInt8]($0) }
    }
    return bytes
}

import CZstd
import Foundation
import Locking

/// Thin, checked wrappers around libzstd's dictionary builder (ZDICT cover / fastCover) that return
/// **raw content** — the bytes RFC 9842 ships — never a zstd-format dictionary.
///
/// ZDICT always emits a zstd dictionary (magic `0xEC30A437`, id, entropy tables, then content). A
/// client loads an RFC 9842 dictionary as raw content, so the header would be dead weight and its
/// tables unused. We ask ZDICT for `targetSize + headerSlack` bytes, locate the header with
/// `ZDICT_getDictHeaderSize`, and keep the last `targetSize` content bytes (cover places its best
/// segments last, nearest the data, where offsets are cheapest).
///
/// Every call runs single-threaded (`nbThreads = 1`) with notifications off, so the same input and
/// parameters always give the same bytes. Thread-safe; inputs are only read. Cover builds are
/// serialised process-wide: libzstd before 1.5.6 sorts with `qsort` and a global context
/// (`g_coverCtx`), so two concurrent cover builds corrupt each other's sort (measured: different
/// dictionaries run to run). fastCover has no such global and runs concurrently.
public enum ZstdDictionaryBuilder {
    /// Room asked for beyond the target so the zstd header does not eat into the content.
    static let headerSlack = 2048

    /// Held around every ZDICT cover call (see the type's documentation).
    private static let coverLock = Locked(())

    /// The parameters a cover/fastCover build used (after optimisation, the ones it chose).
    public struct Parameters: Sendable, Hashable, CustomStringConvertible {
        public var k: Int
        public var d: Int
        /// fastCover's frequency-table log; nil for cover.
        public var f: Int?

        public init(k: Int, d: Int, f: Int? = nil) {
            self.k = k
            self.d = d
            self.f = f
        }

        public var description: String { "k=\(k) d=\(d)" + (f.map { " f=\($0)" } ?? "") }
    }

    /// Runs `ZDICT_optimizeTrainFromBuffer_fastCover`: tries `steps` values of k for d = `d` (or 6 and
    /// 8 when `d` is 0) on 75 % of the pieces and scores them on the rest. Returns the raw content
    /// and the chosen parameters.
    public static func optimizeFastCover(
        _ input: TrainingBuffer, targetSize: Int, d: Int, steps: Int, f: Int = 20
    ) throws(TrainingError) -> (content: [UInt8], parameters: Parameters) {
        var params = ZDICT_fastCover_params_t()
        params.d = UInt32(d)
        params.f = UInt32(f)
        params.steps = UInt32(steps)
        params.nbThreads = 1
        params.splitPoint = input.pieceCount >= 20 ? 0.75 : 1.0
        params.accel = 1
        let content = try build(input, targetSize: targetSize) { out, cap, samples, sizes, count in
            ZDICT_optimizeTrainFromBuffer_fastCover(out, cap, samples, sizes, count, &params)
        }
        return (content, Parameters(k: Int(params.k), d: Int(params.d), f: Int(params.f)))
    }

    /// Runs `ZDICT_trainFromBuffer_fastCover` with fixed parameters on every piece.
    public static func fastCover(_ input: TrainingBuffer, targetSize: Int, parameters: Parameters) throws(TrainingError) -> [UInt8] {
        var params = ZDICT_fastCover_params_t()
        params.k = UInt32(parameters.k)
        params.d = UInt32(parameters.d)
        params.f = UInt32(parameters.f ?? 20)
        params.nbThreads = 1
        params.splitPoint = 1.0
        params.accel = 1
        return try build(input, targetSize: targetSize) { out, cap, samples, sizes, count in
            ZDICT_trainFromBuffer_fastCover(out, cap, samples, sizes, count, params)
        }
    }

    /// Runs `ZDICT_trainFromBuffer_cover` (exact dmer counts via a suffix array: slower and more
    /// memory than fastCover, usually a better dictionary) with fixed parameters on every piece.
    public static func cover(_ input: TrainingBuffer, targetSize: Int, parameters: Parameters) throws(TrainingError) -> [UInt8] {
        var params = ZDICT_cover_params_t()
        params.k = UInt32(parameters.k)
        params.d = UInt32(parameters.d)
        params.nbThreads = 1
        params.splitPoint = 1.0
        return try build(input, targetSize: targetSize) { out, cap, samples, sizes, count in
            coverLock.withLock { _ in ZDICT_trainFromBuffer_cover(out, cap, samples, sizes, count, params) }
        }
    }

    /// Runs `ZDICT_optimizeTrainFromBuffer_cover` over `steps` values of k (d = 6 and 8 when `d` is 0),
    /// training and scoring on every piece.
    public static func optimizeCover(
        _ input: TrainingBuffer, targetSize: Int, d: Int, steps: Int
    ) throws(TrainingError) -> (content: [UInt8], parameters: Parameters) {
        var params = ZDICT_cover_params_t()
        params.d = UInt32(d)
        params.steps = UInt32(steps)
        params.nbThreads = 1
        params.splitPoint = 1.0
        let content = try build(input, targetSize: targetSize) { out, cap, samples, sizes, count in
            coverLock.withLock { _ in ZDICT_optimizeTrainFromBuffer_cover(out, cap, samples, sizes, count, &params) }
        }
        return (content, Parameters(k: Int(params.k), d: Int(params.d), f: nil))
    }

    /// The content part of a zstd-format dictionary (everything after magic, id and entropy tables);
    /// bytes without the zstd dictionary magic are returned unchanged (they already are raw content).
    public static func rawContent(of dictionary: [UInt8]) throws(TrainingError) -> [UInt8] {
        guard hasZstdDictionaryMagic(dictionary) else { return dictionary }
        let header = dictionary.withUnsafeBytes { ZDICT_getDictHeaderSize($0.baseAddress, $0.count) }
        if ZDICT_isError(header) != 0 { throw .zdict(String(cString: ZDICT_getErrorName(header))) }
        return Array(dictionary[min(header, dictionary.count)...])
    }

    /// True when `bytes` start with the zstd dictionary magic number 0xEC30A437 (little-endian).
    public static func hasZstdDictionaryMagic(_ bytes: [UInt8]) -> Bool {
        bytes.count >= 8 && bytes[0] == 0x37 && bytes[1] == 0xA4 && bytes[2] == 0x30 && bytes[3] == 0xEC
    }

    private typealias ZDICTCall = (
        UnsafeMutableRawPointer?, Int, UnsafeRawPointer?, UnsafePointer<Int>?, UInt32
    ) -> Int

    private static func build(_ input: TrainingBuffer, targetSize: Int, _ call: ZDICTCall) throws(TrainingError) -> [UInt8] {
        guard input.pieceCount >= 5 else {
            throw .zdict("the zstd dictionary builder needs at least 5 training pieces, got \(input.pieceCount)")
        }
        let capacity = targetSize + headerSlack
        var out = [UInt8](repeating: 0, count: capacity)
        let sizes = input.pieceSizes
        let written: Int = out.withUnsafeMutableBytes { outBuffer in
            input.bytes.withUnsafeBytes { samples in
                sizes.withUnsafeBufferPointer { sizes in
                    call(outBuffer.baseAddress, capacity, samples.baseAddress, sizes.baseAddress, UInt32(sizes.count))
                }
            }
        }
        if ZDICT_isError(written) != 0 {
            let reason = String(cString: ZDICT_getErrorName(written))
            throw .zdict(reason.contains("Src size") || reason.contains("src size")
                ? "\(reason) (the samples are too small or too few for a \(targetSize)-byte dictionary)" : reason)
        }
        let content = try rawContent(of: Array(out.prefix(written)))
        return Array(content.suffix(targetSize))
    }
}

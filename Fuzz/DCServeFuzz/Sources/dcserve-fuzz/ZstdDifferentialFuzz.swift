import CZstdReference
import PortableZstd

// zstd-differential: the pure-Swift decoder (PortableZstd) against libzstd on the same input.
//
// Input: a 2-byte little-endian length n, then n bytes of raw-content dictionary (n is taken modulo
// what is left), then the zstd input (any number of frames). Both decoders get the same limits
// (1 MiB of output, 8 MiB windows). Invariant: the same output, or both refuse (the error kinds
// may differ).
//
// The reference is libzstd's buffer-less streaming decoder (ZSTD_decompressBegin_usingDict +
// ZSTD_decompressContinue, one frame after another into one contiguous buffer, each frame with the
// dictionary as its history), plus the two checks PureZstd makes that this API leaves to its caller:
// the window limit (ZSTD_getFrameHeader) and the declared content size of every frame. Inputs with a
// legacy (v0.x) frame are skipped: libzstd may decode those, PureZstd refuses them by design. A
// dictionary starting with the ZDICT magic has its first byte changed, so that libzstd also loads it
// as raw content.

private let differentialLimits = ZstdDecodeLimits(maxOutputBytes: 1 << 20, maxWindowBytes: 1 << 23)
nonisolated(unsafe) private let referenceContext: OpaquePointer = ZSTD_createDCtx()
nonisolated(unsafe) private let referenceOutput = UnsafeMutablePointer<UInt8>.allocate(capacity: 1 << 20)

private enum ReferenceResult: Equatable {
    case decoded([UInt8])
    case refused
    case legacy
}

private func referenceDecode(_ input: UnsafeBufferPointer<UInt8>, dictionary: UnsafeBufferPointer<UInt8>) -> ReferenceResult {
    let n = input.count
    guard let base = input.baseAddress else { return .decoded([]) }
    let capacity = differentialLimits.maxOutputBytes
    var pos = 0
    var op = 0
    while pos < n {
        if n - pos >= 4 {
            let magic = UInt32(base[pos]) | UInt32(base[pos + 1]) << 8 | UInt32(base[pos + 2]) << 16 | UInt32(base[pos + 3]) << 24
            if (0xFD2F_B522...0xFD2F_B527).contains(magic) { return .legacy }
        }
        var header = ZSTD_frameHeader()
        let headerResult = ZSTD_getFrameHeader(&header, base + pos, n - pos)
        if ZSTD_isError(headerResult) != 0 || headerResult > 0 { return .refused }
        if header.frameType == ZSTD_frame, header.windowSize > UInt64(differentialLimits.maxWindowBytes) { return .refused }
        guard ZSTD_isError(ZSTD_decompressBegin_usingDict(referenceContext, dictionary.baseAddress, dictionary.count)) == 0
        else { return .refused }
        let frameStart = op
        while true {
            let need = ZSTD_nextSrcSizeToDecompress(referenceContext)
            if need == 0 { break }
            guard need <= n - pos else { return .refused }
            let produced = ZSTD_decompressContinue(referenceContext, referenceOutput + op, capacity - op, base + pos, need)
            guard ZSTD_isError(produced) == 0 else { return .refused }
            pos += need
            op += produced
        }
        if header.frameType == ZSTD_frame, header.frameContentSize != ZSTD_CONTENTSIZE_UNKNOWN,
           UInt64(op - frameStart) != header.frameContentSize
        {
            return .refused
        }
    }
    return .decoded(Array(UnsafeBufferPointer(start: referenceOutput, count: op)))
}

func fuzzZstdDifferential(_ bytes: [UInt8]) {
    var dictionary: [UInt8] = []
    var input = bytes
    if bytes.count >= 2 {
        let length = (Int(bytes[0]) | Int(bytes[1]) << 8) % (bytes.count - 1)
        dictionary = Array(bytes[2..<(2 + length)])
        input = Array(bytes[(2 + length)...])
    }
    if dictionary.count >= 8, dictionary[0..<4] == [0x37, 0xA4, 0x30, 0xEC] { dictionary[0] ^= 1 }
    let reference = input.withUnsafeBufferPointer { i in dictionary.withUnsafeBufferPointer { d in referenceDecode(i, dictionary: d) } }
    if reference == .legacy { return }
    let swift: ReferenceResult
    do {
        swift = .decoded(try PureZstd.decompress(input, dictionary: dictionary, limits: differentialLimits))
    } catch {
        swift = .refused
    }
    if swift != reference {
        let describe: (ReferenceResult) -> String = {
            switch $0 {
            case .decoded(let out): "decoded \(out.count) bytes"
            case .refused: "refused"
            case .legacy: "legacy"
            }
        }
        var detail = ""
        if case .decoded(let a) = swift, case .decoded(let b) = reference {
            let first = (0..<min(a.count, b.count)).first { a[$0] != b[$0] } ?? min(a.count, b.count)
            detail = ", first difference at byte \(first)"
        }
        let swiftError = (try? PureZstd.decompress(input, dictionary: dictionary, limits: differentialLimits)) == nil
            ? { do { _ = try PureZstd.decompress(input, dictionary: dictionary, limits: differentialLimits); return "" } catch { return " (\(error))" } }()
            : ""
        fatalError("PureZstd \(describe(swift))\(swiftError), libzstd \(describe(reference))\(detail)")
    }
}

/// Resource limits a decoder enforces on untrusted input.
public struct DecodeLimits: Sendable, Hashable {
    /// Largest decoded size accepted; decoding stops with `CodecError.outputLimitExceeded` once more
    /// would be produced. Decoders check it every output chunk (≤ 128 KiB), before growing output.
    public var maxOutput: Int
    /// Largest window accepted, as log2 bytes; nil means the coding's standard limit
    /// (`standardMaxWindowLog(for:dictionarySize:)`).
    public var maxWindowLog: Int?

    public init(maxOutput: Int, maxWindowLog: Int? = nil) {
        self.maxOutput = max(0, maxOutput)
        self.maxWindowLog = maxWindowLog
    }

    /// 1 GiB of output, standard windows.
    public static let `default` = DecodeLimits(maxOutput: 1 << 30)

    /// The window a conforming client must accept for `coding`:
    /// - zstd: 8 MiB (RFC 9659);
    /// - dcz: max(8 MiB, 1.25 × dictionary size) capped at 128 MiB (RFC 9842 §5), rounded up to a power of 2;
    /// - br, dcb: 16 MiB (brotli without large-window mode);
    /// - gzip, identity: 32 KiB / not applicable (15).
    public static func standardMaxWindowLog(for coding: ContentCoding, dictionarySize: Int = 0) -> Int {
        switch coding {
        case .zstd: return 23
        case .dcz:
            let needed = max(1 << 23, dictionarySize + dictionarySize / 4)
            return min(27, ceilLog2(needed))
        case .br, .dcb: return 24
        case .gzip, .identity: return 15
        }
    }

    package func effectiveMaxWindowLog(for coding: ContentCoding, dictionarySize: Int = 0) -> Int {
        maxWindowLog ?? Self.standardMaxWindowLog(for: coding, dictionarySize: dictionarySize)
    }
}

/// ceil(log2(n)) for n ≥ 1 (0 for n ≤ 1).
package func ceilLog2(_ n: Int) -> Int {
    n <= 1 ? 0 : Int.bitWidth - (n - 1).leadingZeroBitCount
}

/// floor(log2(n)) for n ≥ 1 (0 for n ≤ 1).
package func floorLog2(_ n: Int) -> Int {
    n <= 1 ? 0 : Int.bitWidth - 1 - n.leadingZeroBitCount
}

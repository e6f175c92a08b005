import CBrotli
import CZstd

/// When a body is compressed: per request (latency matters) or ahead of time (size matters).
public enum CompressionProfile: Sendable, Hashable {
    case onTheFly
    case precompressed
}

extension ContentCoding {
    /// Documented default levels:
    ///
    /// | coding | on the fly | precompressed |
    /// |---|---|---|
    /// | dcz  | 3 | 19 |
    /// | dcb  | 5 | 11 |
    /// | br   | 5 | 11 |
    /// | zstd | 3 | 19 |
    /// | gzip | 6 | 6 (9 gains little) |
    public func defaultLevel(_ profile: CompressionProfile) -> Int {
        switch (self, profile) {
        case (.dcz, .onTheFly), (.zstd, .onTheFly): 3
        case (.dcz, .precompressed), (.zstd, .precompressed): 19
        case (.dcb, .onTheFly), (.br, .onTheFly): 5
        case (.dcb, .precompressed), (.br, .precompressed): 11
        case (.gzip, _): 6
        case (.identity, _): 0
        }
    }

    /// The range of levels the coding accepts; `effectiveLevel(_:)` clamps into it.
    /// dcb starts at 5 because brotli ignores an attached dictionary below quality 5.
    public var levelRange: ClosedRange<Int> {
        switch self {
        case .dcz, .zstd: Int(ZSTD_minCLevel())...Int(ZSTD_maxCLevel())
        case .dcb: 5...Int(BROTLI_MAX_QUALITY)
        case .br: Int(BROTLI_MIN_QUALITY)...Int(BROTLI_MAX_QUALITY)
        case .gzip: 0...9
        case .identity: 0...0
        }
    }

    /// The cheapest level that still compresses as the coding is meant to (1; dcb 5, where brotli
    /// starts using a dictionary): for estimates, such as a "bytes saved" baseline.
    public var cheapestLevel: Int {
        switch self {
        case .dcb: 5
        case .identity: 0
        default: 1
        }
    }

    /// `level` clamped into `levelRange` (so dcb at quality < 5 is raised to 5, never silently
    /// compressed without its dictionary).
    public func effectiveLevel(_ level: Int) -> Int {
        min(max(level, levelRange.lowerBound), levelRange.upperBound)
    }
}

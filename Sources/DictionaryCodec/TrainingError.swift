/// Why `dcserve train` could not build or evaluate a dictionary. Every case has a message a user can
/// act on; callers print it and exit non-zero.
public enum TrainingError: Error, Equatable, Sendable, CustomStringConvertible {
    /// No sample at all was given (empty directory, empty URL list, no store entries).
    case noSamples
    /// Fewer usable samples than training plus held-out evaluation need.
    case tooFewSamples(found: Int, required: Int)
    /// Every sample is smaller than `minimumSize` bytes.
    case samplesTooSmall(count: Int, minimumSize: Int)
    /// The requested dictionary size is outside what dcserve trains.
    case targetSizeOutOfRange(Int, allowed: ClosedRange<Int>)
    /// The held-out fraction is not in [0, 1).
    case heldOutFractionOutOfRange(Double)
    /// The zstd dictionary builder (ZDICT) failed; the string is its reason.
    case zdict(String)

    public var description: String {
        switch self {
        case .noSamples:
            "no samples: give a directory with sample responses (--samples), a URL list (--urls) or a store rule (--store/--rule)"
        case .tooFewSamples(let found, let required):
            "too few samples: found \(found) usable, need at least \(required) (the zstd dictionary builder needs "
                + "at least 5 training samples plus held-out ones for the evaluation; a few hundred responses "
                + "of the kind the dictionary will compress work best)"
        case .samplesTooSmall(let count, let minimumSize):
            "all \(count) samples are smaller than \(minimumSize) bytes: nothing a dictionary could help with"
        case .targetSizeOutOfRange(let size, let allowed):
            "dictionary size \(size) bytes is out of range (\(allowed.lowerBound)...\(allowed.upperBound) bytes)"
        case .heldOutFractionOutOfRange(let fraction):
            "held-out fraction \(fraction) must be at least 0 and less than 1 (0: no held-out report)"
        case .zdict(let reason):
            "dictionary training failed: \(reason)"
        }
    }
}

import Foundation

/// One sample response for training or evaluating a dictionary.
///
/// `name` identifies the sample stably (relative path, URL or store hash); it drives the sort order and
/// the seeded train/held-out split, so the same inputs always give the same split. `modified` (when
/// known) picks the "newest sample" candidate.
public struct TrainingSample: Sendable, Hashable {
    public var name: String
    public var bytes: [UInt8]
    public var modified: Date?

    public init(name: String, bytes: [UInt8], modified: Date? = nil) {
        self.name = name
        self.bytes = bytes
        self.modified = modified
    }
}

/// Limits applied to samples before training. The defaults are what `dcserve train` documents:
///
/// - samples shorter than `minimumSampleSize` (32 bytes) are skipped;
/// - at least `minimumSampleCount` (10) usable samples are required: the zstd builder needs at least
///   5 training samples, and the evaluation needs held-out ones;
/// - for training, a sample longer than `trainingChunkSize` (128 KiB, like `zstd --train -B`) is split
///   into pieces of that size (the last piece may be shorter); evaluation uses whole samples;
/// - at most `maxTrainingBytes` (256 MiB) of pieces are given to the builder, taken in sample order.
public struct TrainingSampleLimits: Sendable, Hashable {
    public var minimumSampleSize = 32
    public var minimumSampleCount = 10
    public var trainingChunkSize = 128 * 1024
    public var maxTrainingBytes = 256 << 20

    public init() {}
}

/// The deterministic three-way split of the samples.
///
/// Each sample gets a key `SHA-256("dcserve-train", seed, name)`; the lowest keys form the held-out
/// set (`heldOutFraction`, at least 1; none when the fraction is 0, e.g. when the caller keeps its own
/// held-out set outside the samples); of the rest, the lowest keys under a second derivation form the
/// validation set (10 %, at least 1) that chooses between candidate dictionaries; the remainder is
/// the training set. Adding a sample never moves other samples between sets. Each set is sorted by
/// name. A value type; immutable after construction.
public struct TrainingSplit: Sendable {
    /// Samples the candidates are built from.
    public let training: [TrainingSample]
    /// Samples that choose between candidates (never trained on, never reported).
    public let validation: [TrainingSample]
    /// Samples the final report is computed on (never trained on, never used for choosing).
    public let heldOut: [TrainingSample]
    /// Names of samples skipped as smaller than the minimum size.
    public let skippedTiny: [String]
    /// Training and validation samples together, sorted by name: what a final dictionary may be
    /// built from once validation has chosen the method (never the held-out set).
    public let outsideHeldOut: [TrainingSample]

    public init(
        samples: [TrainingSample], heldOutFraction: Double, seed: UInt64, limits: TrainingSampleLimits = .init()
    ) throws(TrainingError) {
        guard heldOutFraction >= 0, heldOutFraction < 1 else { throw .heldOutFractionOutOfRange(heldOutFraction) }
        guard !samples.isEmpty else { throw .noSamples }
        let usable = samples.filter { $0.bytes.count >= limits.minimumSampleSize }
        if usable.isEmpty { throw .samplesTooSmall(count: samples.count, minimumSize: limits.minimumSampleSize) }
        guard usable.count >= limits.minimumSampleCount else {
            throw .tooFewSamples(found: usable.count, required: limits.minimumSampleCount)
        }
        skippedTiny = samples.filter { $0.bytes.count < limits.minimumSampleSize }.map(\.name).sorted()

        // Sort by name, then content hash, so duplicate names still order deterministically.
        let sorted = usable.map { ($0, SHA256.hash($0.bytes)) }
            .sorted { $0.0.name != $1.0.name ? $0.0.name < $1.0.name : $0.1 < $1.1 }
            .map(\.0)
        let indexed = Array(sorted.enumerated()).map { ($0.offset, $0.element) }
        let byHeldOutKey = indexed.sorted {
            let a = Self.key(seed: seed, salt: "held-out", name: $0.1.name, index: $0.0)
            let b = Self.key(seed: seed, salt: "held-out", name: $1.1.name, index: $1.0)
            return a != b ? a < b : $0.0 < $1.0
        }
        let heldOutCount = heldOutFraction == 0
            ? 0 : min(max(1, Int((Double(sorted.count) * heldOutFraction).rounded())), sorted.count - 6)
        let rest = Array(byHeldOutKey.dropFirst(heldOutCount))
        let byValidationKey = rest.sorted {
            let a = Self.key(seed: seed, salt: "validation", name: $0.1.name, index: $0.0)
            let b = Self.key(seed: seed, salt: "validation", name: $1.1.name, index: $1.0)
            return a != b ? a < b : $0.0 < $1.0
        }
        let validationCount = min(max(1, Int((Double(rest.count) * 0.1).rounded())), rest.count - 5)
        heldOut = byHeldOutKey.prefix(heldOutCount).sorted { $0.0 < $1.0 }.map(\.1)
        validation = byValidationKey.prefix(validationCount).sorted { $0.0 < $1.0 }.map(\.1)
        training = byValidationKey.dropFirst(validationCount).sorted { $0.0 < $1.0 }.map(\.1)
        outsideHeldOut = rest.sorted { $0.0 < $1.0 }.map(\.1)
    }

    /// A 64-bit key from SHA-256 over the seed, a salt, the sample's name and its sorted position.
    static func key(seed: UInt64, salt: String, name: String, index: Int) -> UInt64 {
        let text = "dcserve-train\u{0}\(seed)\u{0}\(salt)\u{0}\(index)\u{0}\(name)"
        let digest = SHA256.hash(Array(text.utf8)).bytes
        return digest.prefix(8).reduce(0) { $0 << 8 | UInt64($1) }
    }
}

/// Training input in the layout ZDICT wants: one contiguous buffer and the size of each piece.
///
/// Built from samples by splitting every sample longer than `limits.trainingChunkSize` into pieces of
/// that size and stopping at `limits.maxTrainingBytes`.
public struct TrainingBuffer: Sendable {
    public private(set) var bytes: [UInt8] = []
    public private(set) var pieceSizes: [Int] = []
    /// For each piece, the index (in the `samples` given) of the sample it was cut from.
    public private(set) var pieceSamples: [Int] = []
    /// Number of samples that were split into more than one piece.
    public private(set) var splitSamples = 0
    /// True when pieces were dropped because of `maxTrainingBytes`.
    public private(set) var capped = false

    public init(samples: [TrainingSample], limits: TrainingSampleLimits = .init()) {
        let chunk = max(1, limits.trainingChunkSize)
        outer: for (index, sample) in samples.enumerated() {
            if sample.bytes.count > chunk { splitSamples += 1 }
            var start = 0
            while start < sample.bytes.count {
                let end = min(start + chunk, sample.bytes.count)
                if bytes.count + (end - start) > limits.maxTrainingBytes {
                    capped = true
                    break outer
                }
                bytes.append(contentsOf: sample.bytes[start..<end])
                pieceSizes.append(end - start)
                pieceSamples.append(index)
                start = end
            }
        }
    }

    public var pieceCount: Int { pieceSizes.count }

    /// For each byte of `ranges` (positions in ``bytes``, concatenated in order), the index of the
    /// piece it lies in.
    public func pieceOrigins(of ranges: [Range<Int>]) -> [Int32] {
        var pieceEnds: [Int] = []
        pieceEnds.reserveCapacity(pieceSizes.count)
        var end = 0
        for size in pieceSizes { end += size; pieceEnds.append(end) }
        var origins: [Int32] = []
        origins.reserveCapacity(ranges.reduce(0) { $0 + $1.count })
        for range in ranges {
            // First piece whose end is past the range's start.
            var lo = 0, hi = pieceEnds.count
            while lo < hi { let mid = (lo + hi) / 2; if pieceEnds[mid] <= range.lowerBound { lo = mid + 1 } else { hi = mid } }
            var piece = lo
            for position in range {
                while piece < pieceEnds.count - 1, position >= pieceEnds[piece] { piece += 1 }
                origins.append(Int32(min(piece, pieceEnds.count - 1)))
            }
        }
        return origins
    }
}

/// ZDICT's cover segment selection with fastCover's hashed d-mers, scoring each d-mer by the number of
/// training pieces that contain it (as exact cover does) rather than by its occurrence count (as
/// fastCover does), so one page repeating a string cannot outweigh the site.
///
/// The training data is cut into epochs; from each epoch in turn the `k`-byte window whose distinct
/// d-mers have the highest total score is taken (trimmed of d-mers that score 0), those d-mers' scores
/// are zeroed, and the segment is placed before the ones taken earlier, so the first (best) segments
/// end the dictionary, nearest the data. Runs in time linear in the input (no suffix array), on the
/// calling thread, with no global state.
///
/// Stateless, deterministic (same input and parameters → same bytes) and thread-safe.
public enum DocumentFrequencyCover {
    /// A raw-content dictionary of at most `targetSize` bytes built from `input`'s pieces with segment
    /// size `k`, d-mer size `d` (4...8) and a hash table of 2^`f` entries (22 by default: fewer
    /// collisions than fastCover's 20 on tens of MB, measured better on HTML).
    public static func build(_ input: TrainingBuffer, targetSize: Int, k: Int, d: Int = 8, f: Int = 22) -> [UInt8] {
        var result: [UInt8] = []
        for segment in segments(input, targetSize: targetSize, k: k, d: d, f: f) { result.append(contentsOf: input.bytes[segment]) }
        return result
    }

    /// ZDICT's cover passes: its epochs are sized so that about four scans fill the dictionary.
    public static let zdictPasses = 4

    /// The positions in `input.bytes` that ``build(_:targetSize:k:d:f:)`` concatenates, in dictionary order.
    /// `passes`: about how many times the epochs are scanned to fill `targetSize` (``zdictPasses``; fewer
    /// passes mean fewer, wider epochs and proportionally less time).
    public static func segments(
        _ input: TrainingBuffer, targetSize: Int, k: Int, d: Int = 8, f: Int = 22, passes: Int = zdictPasses
    ) -> [Range<Int>] {
        precondition((4...8).contains(d) && k > d && (8...28).contains(f) && passes > 0, "d in 4...8, k > d, f in 8...28, passes > 0")
        let bytes = input.bytes
        let dmers = bytes.count - 8 + 1  // every hash reads 8 bytes
        guard dmers > 0, targetSize > 0 else { return [] }
        let hashes = dmerHashes(bytes, count: dmers, d: d, f: f)

        // Per hash, its score (the number of pieces containing the d-mer) in the high 32 bits and its
        // count in the current window in the low 32: one memory access per d-mer entering or leaving
        // the window (the tables are far larger than the caches).
        // While scoring, the low 32 bits hold the last piece (+ 1) that counted the d-mer.
        var table = [UInt64](repeating: 0, count: 1 << f)
        var pieceStart = 0
        for (piece, size) in input.pieceSizes.enumerated() {
            let mark = UInt64(piece + 1)
            for position in pieceStart..<min(pieceStart + size, dmers) {
                let h = Int(hashes[position])
                if table[h] & 0xFFFF_FFFF != mark { table[h] = (table[h] >> 32 + 1) << 32 | mark }
            }
            pieceStart += size
        }
        for h in table.indices { table[h] &= ~0xFFFF_FFFF }

        // Epochs as ZDICT computes them (4 passes over the data fill the dictionary; or `passes`).
        var epochCount = max(1, targetSize / k / passes)
        var epochSize = dmers / epochCount
        if epochSize < k * 10 {
            epochSize = min(k * 10, dmers)
            epochCount = dmers / epochSize
        }
        var segments: [Range<Int>] = []
        var remaining = targetSize
        var zeroRun = 0
        let maxZeroRun = max(10, min(100, epochCount >> 3))
        var epoch = 0
        hashes.withUnsafeBufferPointer { hashes in
            table.withUnsafeMutableBufferPointer { table in
                while remaining > 0 {
                    let begin = epoch * epochSize
                    epoch = (epoch + 1) % epochCount
                    guard let best = bestSegment(
                        hashes, begin..<min(begin + epochSize, dmers), dmersInWindow: k - d + 1, table: table)
                    else {
                        zeroRun += 1
                        if zeroRun >= maxZeroRun { break }
                        continue
                    }
                    zeroRun = 0
                    for position in best { table[Int(hashes[position])] &= 0xFFFF_FFFF }
                    let size = min(best.count + d - 1, remaining)
                    if size < d { break }
                    remaining -= size
                    segments.append(best.lowerBound..<(best.lowerBound + size))
                }
            }
        }
        return segments.reversed()
    }

    /// The hash of the d-mer starting at every position (fastCover's: the first `d` bytes, little-endian,
    /// times a 64-bit prime, top `f` bits).
    private static func dmerHashes(_ bytes: [UInt8], count: Int, d: Int, f: Int) -> [UInt32] {
        let shift = UInt64(64 - 8 * d)
        return bytes.withUnsafeBytes { raw in
            (0..<count).map { position in
                let word = UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: position, as: UInt64.self))
                return UInt32(truncatingIfNeeded: ((word << shift) &* 0xCF1B_BCDC_B7A5_6463) >> UInt64(64 - f))
            }
        }
    }

    /// The window of `dmersInWindow` positions in `epoch` whose distinct d-mers score highest, trimmed of
    /// positions whose d-mer scores 0; nil when every window scores 0. `table` holds each hash's score
    /// (high 32 bits) and window count (low 32 bits, all zero on entry and on return).
    private static func bestSegment(
        _ hashes: UnsafeBufferPointer<UInt32>, _ epoch: Range<Int>, dmersInWindow: Int, table: UnsafeMutableBufferPointer<UInt64>
    ) -> Range<Int>? {
        var (begin, score) = (epoch.lowerBound, 0)
        var best = epoch.lowerBound..<epoch.lowerBound
        var bestScore = 0
        for end in epoch {
            let added = Int(hashes[end])
            let entry = table[added]
            if entry & 0xFFFF_FFFF == 0 { score += Int(entry >> 32) }
            table[added] = entry &+ 1
            if end + 1 - begin > dmersInWindow {
                let removed = Int(hashes[begin])
                let left = table[removed] &- 1
                table[removed] = left
                if left & 0xFFFF_FFFF == 0 { score -= Int(left >> 32) }
                begin += 1
            }
            if score > bestScore { (best, bestScore) = (begin..<(end + 1), score) }
        }
        for position in begin..<epoch.upperBound { table[Int(hashes[position])] &-= 1 }
        guard bestScore > 0,
              let first = best.first(where: { table[Int(hashes[$0])] >> 32 > 0 }),
              let last = best.last(where: { table[Int(hashes[$0])] >> 32 > 0 })
        else { return nil }
        return first..<(last + 1)
    }
}

import CZstd

/// Cuts a dictionary of `targetSize` bytes out of a larger candidate pool by measuring which pool bytes
/// zstd actually references when compressing real samples.
///
/// 1. ``usage(of:samples:level:)``: compress each sample with the pool as raw-content dictionary
///    (`ZSTD_generateSequences`) and count, for every pool byte, in how many samples a match copied it
///    (one vote per sample, so one page repeating a string cannot outvote the site).
/// 2. ``select(pool:usage:targetSize:gap:)``: find the highest vote threshold whose segments (runs of
///    bytes at or above it, bridging gaps of up to `gap` bytes) still fill `targetSize`, and cut the
///    segments one vote lower (`slack`: bytes one voter short stay joined to the runs around them, and
///    the ranking chooses among more runs); keep the
///    segments with the most votes per byte until the budget is full; lay them out from fewest to
///    most votes per byte, so the most used bytes end the dictionary, nearest the data, where offsets
///    are cheapest for zstd and brotli. Leftover budget is filled with unselected pool bytes (pool
///    order, from its end) placed first.
/// 3. ``refine(pool:samples:targetSize:level:)``: both steps, then a second round on the pool with
///    the first result appended: matches now prefer that nearer copy, so the rest of the pool only
///    keeps votes for what the first result lacks, and the second cut trades in what adds most.
///
/// Stateless, deterministic (same inputs → same bytes) and thread-safe; inputs are only read.
public enum DictionaryUsageRefiner {
    /// Per pool byte, the number of samples whose compression (at `level`, pool as raw-content
    /// dictionary) copied that byte in a match.
    public static func usage(of pool: [UInt8], samples: [[UInt8]], level: Int) throws(TrainingError) -> [UInt32] {
        try measure(pool, samples: samples, level: level).votes
    }

    /// What zstd did with a pool: per pool byte, `votes` (samples that copied it, see
    /// ``usage(of:samples:level:)``) and `references` (matches, over all samples, whose copy starts there).
    public struct Usage: Sendable {
        public var votes: [UInt32]
        public var references: [UInt32]
    }

    /// ``usage(of:samples:level:)`` and the match count per starting byte, from one pass.
    /// With `origins` (per pool byte, the id of the sample it was cut from) and `sampleIDs` (one per
    /// sample), a sample never votes for bytes cut from itself (leave-source-out: a pool built from the
    /// voters themselves would otherwise favour each page's peculiarities).
    public static func measure(
        _ pool: [UInt8], samples: [[UInt8]], level: Int, origins: [Int32]? = nil, sampleIDs: [Int32]? = nil
    ) throws(TrainingError) -> Usage {
        precondition(origins.map { $0.count == pool.count } ?? true, "one origin per pool byte")
        precondition(sampleIDs.map { $0.count == samples.count } ?? true, "one id per sample")
        var votes = [UInt32](repeating: 0, count: pool.count)
        var references = [UInt32](repeating: 0, count: pool.count)
        guard !pool.isEmpty, let cctx = ZSTD_createCCtx() else { return Usage(votes: votes, references: references) }
        defer { ZSTD_freeCCtx(cctx) }
        // The pool's match-finder tables are built once, not per sample.
        let cParams = ZSTD_getCParams(Int32(level), UInt64(ZSTD_CONTENTSIZE_UNKNOWN), pool.count)
        guard let cdict = pool.withUnsafeBytes({
            ZSTD_createCDict_advanced($0.baseAddress, $0.count, ZSTD_dlm_byCopy, ZSTD_dct_rawContent, cParams,
                                      ZSTD_customMem(customAlloc: nil, customFree: nil, opaque: nil))
        }) else { throw .zdict("ZSTD_createCDict_advanced failed (out of memory?)") }
        defer { ZSTD_freeCDict(cdict) }
        // The last sample (index + 1) that copied each byte: one vote per sample, in time proportional to
        // the bytes copied rather than to the pool.
        var lastVoter = [Int32](repeating: 0, count: pool.count)
        let dictionarySize = pool.count
        for (index, sample) in samples.enumerated() where !sample.isEmpty {
            let own: Int32 = origins != nil ? (sampleIDs?[index] ?? -2) : -2
            ZSTD_CCtx_reset(cctx, ZSTD_reset_session_and_parameters)
            ZSTD_CCtx_setParameter(cctx, ZSTD_c_compressionLevel, Int32(level))
            // ZSTD_c_forceAttachDict (experimentalParam4): search the pool's tables in place; copying them
            // into the context for every sample (zstd's choice above a size cutoff) cost more than matching.
            ZSTD_CCtx_setParameter(cctx, ZSTD_c_experimentalParam4, Int32(ZSTD_dictForceAttach.rawValue))
            let loaded = ZSTD_CCtx_refCDict(cctx, cdict)
            if ZSTD_isError(loaded) != 0 { throw .zdict(String(cString: ZSTD_getErrorName(loaded))) }
            // A sequence holds at least a 3-byte match, plus one delimiter per block.
            var sequences = [ZSTD_Sequence](
                repeating: ZSTD_Sequence(), count: sample.count / 3 + sample.count / 1024 + 64)
            let capacity = sequences.count
            let count = sequences.withUnsafeMutableBufferPointer { out in
                sample.withUnsafeBytes { ZSTD_generateSequences(cctx, out.baseAddress, capacity, $0.baseAddress, $0.count) }
            }
            if ZSTD_isError(count) != 0 { throw .zdict(String(cString: ZSTD_getErrorName(count))) }
            let voter = Int32(index + 1)
            var position = 0
            for sequence in sequences.prefix(count) {
                position += Int(sequence.litLength)
                let length = Int(sequence.matchLength)
                guard length > 0 else { continue }
                let start = position - Int(sequence.offset)
                // Bytes before the sample's start live in the dictionary, which ends at position 0.
                if start < 0 {
                    let from = max(0, dictionarySize + start)
                    let to = min(dictionarySize, dictionarySize + start + length)
                    if from < to {
                        if let origins {
                            if origins[from] != own { references[from] += 1 }
                            for j in from..<to where origins[j] != own && lastVoter[j] != voter {
                                lastVoter[j] = voter
                                votes[j] += 1
                            }
                        } else {
                            references[from] += 1
                            for j in from..<to where lastVoter[j] != voter {
                                lastVoter[j] = voter
                                votes[j] += 1
                            }
                        }
                    }
                }
                position += length
            }
        }
        return Usage(votes: votes, references: references)
    }

    /// Two rounds of ``usage(of:samples:level:)`` and ``select(pool:usage:targetSize:gap:)`` (see the
    /// type's documentation): a dictionary of at most `targetSize` bytes cut from `pool`.
    public static func refine(pool: [UInt8], samples: [[UInt8]], targetSize: Int, level: Int) throws(TrainingError) -> [UInt8] {
        try refine(pool: pool, origins: nil, samples: samples, sampleIDs: nil, targetSize: targetSize, level: level)
    }

    /// ``refine(pool:samples:targetSize:level:)`` with leave-source-out votes (see
    /// ``measure(_:samples:level:origins:sampleIDs:)``), so the voters may include the samples the
    /// pool was cut from, and segments bridging gaps of up to `gap` bytes. `rounds` 1: the first
    /// round's cut only (most votes per byte last), for a caller that measures it again itself.
    public static func refine(
        pool: [UInt8], origins: [Int32]?, samples: [[UInt8]], sampleIDs: [Int32]?, targetSize: Int, level: Int,
        gap: Int = 16, rounds: Int = 2
    ) throws(TrainingError) -> [UInt8] {
        guard pool.count > targetSize else { return pool }
        let usage = try measure(pool, samples: samples, level: level, origins: origins, sampleIDs: sampleIDs).votes
        let first = selectIndices(pool: pool, usage: usage, targetSize: targetSize, gap: gap)
        if rounds < 2 { return first.map { pool[$0] } }
        let extended = pool + first.map { pool[$0] }
        let extendedOrigins = origins.map { origins in origins + first.map { origins[$0] } }
        let measured = try measure(extended, samples: samples, level: level, origins: extendedOrigins, sampleIDs: sampleIDs)
        return selectIndices(
            pool: extended, usage: measured.votes, references: measured.references, targetSize: targetSize, gap: gap
        ).map { extended[$0] }
    }

    /// One round of ``measure(_:samples:level:origins:sampleIDs:)`` and selection with the measured
    /// layout: a dictionary of at most `targetSize` bytes cut from `pool` by what `samples` copy (no
    /// leave-source-out: for pools whose bytes were already chosen by votes, such as two refined
    /// dictionaries laid end to end). Returns the pool unchanged when it already fits.
    public static func cut(pool: [UInt8], samples: [[UInt8]], targetSize: Int, level: Int, gap: Int = 16) throws(TrainingError) -> [UInt8] {
        guard pool.count > targetSize else { return pool }
        let measured = try measure(pool, samples: samples, level: level)
        return selectIndices(
            pool: pool, usage: measured.votes, references: measured.references, targetSize: targetSize, gap: gap
        ).map { pool[$0] }
    }

    /// A dictionary of at most `targetSize` bytes made of the pool's most used segments (see the type's
    /// documentation). Returns the pool unchanged when it already fits.
    /// `slack`: segments are cut at the highest threshold that fills `targetSize` minus this many votes
    /// (at least 1). Measured on held-out pages (bench/train/heldout, splits 0/1/2, × zstd --train's
    /// savings): 1 against 0 gave PostgreSQL 1.057/1.062/1.050 → 1.061/1.066/1.054, git
    /// 1.020/1.036/1.040 → 1.021/1.043/1.047, Python 1.078/1.046/1.069 → 1.080/1.050/1.074; 2 was worse
    /// (git 1.011/1.039/1.043), as was a threshold whose segments fill 1.5× the target.
    public static func select(
        pool: [UInt8], usage: [UInt32], references: [UInt32]? = nil, targetSize: Int, gap: Int = 16, slack: UInt32 = 1
    ) -> [UInt8] {
        guard pool.count > targetSize else { return pool }
        return selectIndices(
            pool: pool, usage: usage, references: references, targetSize: targetSize, gap: gap, slack: slack
        ).map { pool[$0] }
    }

    /// The pool positions ``select(pool:usage:references:targetSize:gap:)`` takes, in dictionary order.
    static func selectIndices(
        pool: [UInt8], usage: [UInt32], references: [UInt32]? = nil, targetSize: Int, gap: Int = 16, slack: UInt32 = 1
    ) -> [Int] {
        precondition(usage.count == pool.count, "one usage count per pool byte")
        precondition(references.map { $0.count == pool.count } ?? true, "one reference count per pool byte")
        guard pool.count > targetSize else { return Array(pool.indices) }
        var threshold: UInt32 = 1
        while segments(usage: usage, threshold: threshold + 1, gap: gap).reduce(0, { $0 + $1.range.count }) >= targetSize {
            threshold += 1
        }
        let all = segments(usage: usage, threshold: max(1, threshold - min(slack, threshold)), gap: gap)
        // Most votes per byte first; ties by position.
        let byDensity = all.sorted {
            let (a, b) = (Double($0.votes) / Double($0.range.count), Double($1.votes) / Double($1.range.count))
            return a != b ? a > b : $0.range.lowerBound < $1.range.lowerBound
        }
        var chosen: [(range: Range<Int>, votes: Int)] = []
        var total = 0
        for segment in byDensity where total + segment.range.count <= targetSize {
            chosen.append(segment)
            total += segment.range.count
        }
        if let references {
            chosen = layout(chosen, references: references)
        } else {
            chosen.reverse()  // the most votes per byte last
        }

        // Fill what is left with unselected pool bytes, taken from the pool's end (cover's best).
        var taken = [Bool](repeating: false, count: pool.count)
        for segment in chosen { for i in segment.range { taken[i] = true } }
        var filler: [Int] = []
        var i = pool.count - 1
        while i >= 0, total + filler.count < targetSize {
            if !taken[i] { filler.append(i) }
            i -= 1
        }
        var result = Array(filler.reversed())
        result.reserveCapacity(targetSize)
        for segment in chosen { result.append(contentsOf: segment.range) }
        return result
    }

    /// The chosen segments ordered by matches per byte, fewest first: segments copied often (short,
    /// frequent strings) end the dictionary, where offsets cost fewest bits; long runs copied once per
    /// response (a shared stylesheet) move to the front, where their one far offset costs little.
    /// Ties keep the votes-per-byte order (most votes last).
    static func layout(_ chosen: [(range: Range<Int>, votes: Int)], references: [UInt32]) -> [(range: Range<Int>, votes: Int)] {
        let byVotes = Array(chosen.reversed())  // fewest votes per byte first
        let density = byVotes.map { segment in
            Double(segment.range.reduce(0) { $0 + Int(references[$1]) }) / Double(segment.range.count)
        }
        return byVotes.indices.sorted { density[$0] != density[$1] ? density[$0] < density[$1] : $0 < $1 }.map { byVotes[$0] }
    }

    /// Runs of bytes with at least `threshold` votes, bridging gaps of at most `gap` bytes.
    static func segments(usage: [UInt32], threshold: UInt32, gap: Int) -> [(range: Range<Int>, votes: Int)] {
        var result: [(range: Range<Int>, votes: Int)] = []
        var i = 0
        while i < usage.count {
            while i < usage.count, usage[i] < threshold { i += 1 }
            guard i < usage.count else { break }
            let start = i
            var last = i
            while i < usage.count {
                if usage[i] >= threshold { last = i; i += 1 } else if i - last <= gap { i += 1 } else { break }
            }
            let range = start..<(last + 1)
            result.append((range, range.reduce(0) { $0 + Int(usage[$1]) }))
            i = last + 1
        }
        return result
    }
}

import Foundation

/// How much time training may spend to win bytes.
///
/// | effort | candidates |
/// |---|---|
/// | `fast` | fastCover (d = 8, 4 values of k: what `zstd --train` does) · newest sample |
/// | `default` | newest sample · 3 × cover-refined (k = target/200, target/50, target/12.5; d = 8) |
/// | `max` | fastCover (d = 6 and 8, 40 values of k) · newest sample · cover optimised (d = 6 and 8, 8 values of k) · 3 × cover-refined |
///
/// `cover-refined` (when there are at least 15 training samples): for each third of the training
/// samples (by name order), with its own segment size (``DictionaryTrainingOptions/refinedSegmentSizes``:
/// which size generalises depends on the site), ``DocumentFrequencyCover`` builds a pool `poolFactor` times the target
/// size (the variant with the largest segments from every training sample, in fewer cover passes:
/// ``DictionaryTrainingOptions/largestSegmentPoolFromAll``, ``DictionaryTrainingOptions/wholePoolPasses``); the training samples of the other two
/// thirds vote on which pool bytes zstd actually uses (``DictionaryUsageRefiner``; never for bytes cut
/// from their own page), and the most used segments make the dictionary. The three variants
/// run side by side; the validation set picks (a plain cover dictionary scored ~2–3 % worse on HTML,
/// so it is not built). With fewer training samples, `default` builds fastCover and cover at the
/// target size instead.
public enum TrainingEffort: String, Sendable, CaseIterable {
    case fast
    case `default`
    case max
}

/// Options for ``DictionaryTrainer/train(samples:options:progress:)``.
public struct DictionaryTrainingOptions: Sendable {
    /// Allowed dictionary sizes: 1 KiB to 16 MiB (bigger dictionaries exceed what RFC 9842 clients
    /// keep cheaply and what dcz's window covers well).
    public static let sizeRange = 1024...(16 << 20)

    /// Size of the dictionary in bytes (the result may be smaller when the samples are).
    public var targetSize = 100 * 1024
    /// Seed of the train/validation/held-out split.
    public var seed: UInt64 = 0
    /// Fraction of samples held out for the final report.
    public var heldOutFraction = 0.2
    public var effort = TrainingEffort.default
    /// dcz level the candidates are compared at on the validation set: a fast proxy (level 9 ranked
    /// the candidates on HTML as level 19 does, at a fraction of the time); the report's held-out
    /// numbers are always at the served levels.
    public var selectionLevel = 9
    /// At most this many validation bytes are compressed per candidate (samples in split order).
    public var maxValidationBytes = 4 << 20
    /// At most this many training bytes go to a cover builder (ZDICT's needs a suffix array;
    /// ``DocumentFrequencyCover`` 4 bytes per input byte).
    public var maxCoverBytes = 64 << 20
    /// The refined candidate cuts the dictionary out of a ``DocumentFrequencyCover`` pool this many
    /// times the target size.
    public var poolFactor = 3
    /// At most this many bytes of training samples vote on which bytes of each pool are used.
    public var maxUsageBytes = 32 << 20
    /// dcz level the usage votes are measured at (a fast proxy for the levels served).
    public var usageLevel = 9
    public var limits = TrainingSampleLimits()
    /// Once validation has chosen a candidate, build the final dictionary again with the same method
    /// and parameters from every sample outside the held-out set (training + validation): more pages,
    /// same choice. The held-out report stays honest (it never saw those samples either).
    public var rebuildChosen = true
    /// Segment size `k` of each `cover-refined` variant's pool, in variant order (cycled when there
    /// are more variants); nil: ``defaultRefinedSegmentSizes(targetSize:)``. Sites differ in which
    /// segment size generalises (measured on held-out pages: the PostgreSQL manual best at k = 500,
    /// git's manual pages at k = 8000), so each variant tries another and validation picks.
    public var refinedSegmentSizes: [Int]? = nil
    /// The refined variant with the largest segment size cuts its pool from every training sample
    /// instead of its third (its voters are still the other two thirds, and none votes for bytes cut
    /// from its own page). Long runs shared by a few pages (git's manual pages repeat option lists
    /// and configuration sections) rarely recur within one third; measured on held-out pages: git
    /// 1.014/1.017/1.031 → 1.021/1.038/1.039 × zstd --train's savings, PostgreSQL unchanged (its
    /// validation keeps choosing k = target/200).
    public var largestSegmentPoolFromAll = true
    /// Cover passes (``DocumentFrequencyCover/segments(_:targetSize:k:d:f:passes:)``) of the variant whose
    /// pool is cut from every training sample (ZDICT's 4 for the others): its input is three times
    /// theirs, so its epochs are already three times wider per segment; half the passes halve its
    /// cover time (the trainer's largest stage). Measured on held-out pages: git 1.021/1.038/1.039 →
    /// 1.019/1.036/1.040 × zstd --train's savings, training CPU −17 %; PostgreSQL unchanged (another
    /// variant is chosen). 2 for every variant cost PostgreSQL 0.01.
    public var wholePoolPasses = 2
    /// When the chosen candidate is `cover-refined`, its rebuild (``rebuildChosen``) keeps only the
    /// usage refiner's first round, and its second round is a cut of the validated candidate and that
    /// first cut end to end (a pool of twice the target, the rebuild last) by one round of votes from
    /// every sample outside the held-out set (``DictionaryUsageRefiner/cut(pool:samples:targetSize:level:gap:)``,
    /// at `usageLevel`, up to `maxUsageBytes`): where the refiner's second round re-measures its first
    /// cut against its own pool, this one re-measures it against an independent draw. A refined
    /// dictionary depends on which third of the samples its pool was cut from, and the rebuild's thirds
    /// are not the candidate's: the plain rebuild moved held-out savings by up to ±0.5 % against the
    /// validated candidate (Python split 1: candidate 1.055, rebuild 1.050). Measured on held-out
    /// pages (bench/train/heldout, splits 0/1/2, × zstd --train's savings): Python 1.080/1.050/1.074
    /// → 1.089/1.060/1.081, PostgreSQL 1.061/1.066/1.054 → 1.060/1.070/1.057, git 1.021/1.042/1.047 →
    /// 1.021/1.044/1.051, at about the CPU of before (the cut replaces the rebuild's second
    /// measure). The cut after a full two-round rebuild scored the same (1.088/1.062/1.084,
    /// 1.060/1.069/1.057, 1.024/1.045/1.049) at +0.2–0.45× zstd --train's CPU; with the rebuild
    /// first in the pool (filler from the candidate) git fell to 1.020/1.038/1.043; a two-round cut
    /// (as ``DictionaryUsageRefiner/refine(pool:samples:targetSize:level:)``) scored lower (Python
    /// 1.082/1.060/1.074).
    public var mergeRebuildWithChosen = true

    /// Target/200, target/50 and target/12.5, each clamped to 64…16384 (100 KiB: 512, 2048, 8192).
    public static func defaultRefinedSegmentSizes(targetSize: Int) -> [Int] {
        [targetSize / 200, targetSize / 50, targetSize * 2 / 25].map { min(16384, max(64, $0)) }
    }

    public init() {}
}

/// One dictionary the trainer considered.
public struct TrainingCandidate: Sendable {
    /// `fastcover`, `cover`, `cover-refined` or `newest-sample`.
    public let method: String
    /// Parameters or the sample's name.
    public let detail: String
    public let bytes: [UInt8]
    /// Total dcz bytes of the validation samples with this dictionary (at the selection level).
    public let validationBytes: Int
    /// Seconds spent building it.
    public let seconds: Double

    /// True when `other` is this candidate (same method and parameters; several candidates may share
    /// a method).
    public func isSame(as other: TrainingCandidate) -> Bool { method == other.method && detail == other.detail }
}

/// What training produced: the chosen raw dictionary, every candidate and the split used.
public struct TrainingResult: Sendable {
    public let dictionary: [UInt8]
    public let chosen: TrainingCandidate
    public let candidates: [TrainingCandidate]
    public let split: TrainingSplit
    public let trainingBuffer: (pieces: Int, bytes: Int, splitSamples: Int, capped: Bool)
    /// dcz bytes of the validation samples with no dictionary at all (plain zstd at the selection level).
    public let validationBytesWithoutDictionary: Int
    /// The zstd level the validation bytes were measured at (``DictionaryTrainingOptions/selectionLevel``).
    public let selectionLevel: Int
    /// How many samples the final dictionary was built from: `split.outsideHeldOut.count` when the
    /// chosen method was rebuilt on them (``DictionaryTrainingOptions/rebuildChosen``), else nil (the
    /// chosen candidate's own bytes, built from the training set).
    public let rebuiltFromSamples: Int?
    /// Seconds spent on that rebuild (included in the caller's training time).
    public let rebuildSeconds: Double
    /// True when the final dictionary was cut from the chosen candidate and its rebuild together
    /// (``DictionaryTrainingOptions/mergeRebuildWithChosen``; its time is in `rebuildSeconds`).
    public var mergedWithChosen = false
}

/// Builds a raw RFC 9842 dictionary from sample responses.
///
/// Pipeline: split the samples (``TrainingSplit``); build candidates from the training set with
/// ZDICT (``ZstdDictionaryBuilder``) and with ``DocumentFrequencyCover`` pools refined by measured
/// use (``DictionaryUsageRefiner``), plus the newest sample itself (see ``TrainingEffort``); compress
/// the validation set with each candidate through ``DCZ`` at `selectionLevel`; keep the smallest
/// (ties: earlier candidate, in the order fastcover, newest-sample, cover, cover-refined); then build
/// the chosen method once more from training + validation samples (``DictionaryTrainingOptions/rebuildChosen``).
/// Scoring of
/// the first candidates runs on a second thread while the others build; ZDICT itself always runs
/// single-threaded.
/// The held-out set is not touched: ``DictionaryEvaluation`` reports on it.
///
/// Deterministic: same samples (by name and bytes), options and seed → same bytes. Runs on the
/// calling thread; `progress` may be polled from another.
public enum DictionaryTrainer {
    public static func train(
        samples: [TrainingSample], options: DictionaryTrainingOptions = .init(), progress: TrainingProgress? = nil
    ) throws -> TrainingResult {
        guard DictionaryTrainingOptions.sizeRange.contains(options.targetSize) else {
            throw TrainingError.targetSizeOutOfRange(options.targetSize, allowed: DictionaryTrainingOptions.sizeRange)
        }
        let split = try TrainingSplit(
            samples: samples, heldOutFraction: options.heldOutFraction, seed: options.seed, limits: options.limits)
        let buffer = TrainingBuffer(samples: split.training, limits: options.limits)
        var validationSamples: [[UInt8]] = []
        var validationTotal = 0
        for sample in split.validation where validationTotal < options.maxValidationBytes {
            validationSamples.append(sample.bytes)
            validationTotal += sample.bytes.count
        }
        let validation = validationSamples

        // Refined candidates (see ``TrainingEffort``): one per third of the training samples (by name
        // order), each a pool cut down by the votes of the samples it was not built from (voters that
        // include the pool's own samples favour their peculiarities: measured worse on validation);
        // validation picks.
        let refines = options.effort != .fast && split.training.count >= 15
        let variants = refines ? 3 : 0
        let voters = Self.voters(split.training, variants: variants, maxBytes: options.maxUsageBytes)
        let usageTotal = voters.first.map { $0.reduce(0) { $0 + $1.count } } ?? 0
        var coverLimits = options.limits
        coverLimits.maxTrainingBytes = min(options.limits.maxTrainingBytes, options.maxCoverBytes)
        let coverBuffer = buffer.bytes.count > coverLimits.maxTrainingBytes
            ? TrainingBuffer(samples: split.training, limits: coverLimits) : buffer
        let coverParameters = ZstdDictionaryBuilder.Parameters(k: min(2000, max(256, options.targetSize / 50)), d: 8)
        let variantParameters = Self.variantParameters(options, variants: variants)
        let wholePoolVariant = options.largestSegmentPoolFromAll ? Self.largestSegmentVariant(variantParameters) : nil
        let variantInputs = Self.refinedInputs(
            split.training, variants: variants, wholePoolVariant: wholePoolVariant, limits: coverLimits,
            maxUsageBytes: options.maxUsageBytes, wholePoolPasses: options.wholePoolPasses, whole: coverBuffer)

        // Plan stages with rough single-core costs (seconds per MiB) measured on HTML.
        let mb = Double(buffer.bytes.count) / 1_048_576
        let coverMB = Double(coverBuffer.bytes.count) / 1_048_576
        let validationMB = Double(validationTotal) / 1_048_576
        let (fastD, fastSteps): (Int, Int) = switch options.effort {
        case .fast: (8, 4)
        case .default: (8, 1)
        case .max: (0, 40)
        }
        let fastCoverRuns = options.effort != .default || !refines
        if fastCoverRuns {
            progress?.plan("fastCover", estimatedSeconds: 0.2 + mb * 0.012 * Double(fastSteps * (fastD == 0 ? 2 : 1)) + mb * 0.02)
        }
        switch options.effort {
        case .fast: break
        case .default: if !refines { progress?.plan("cover", estimatedSeconds: 0.2 + coverMB * 0.35) }
        case .max: progress?.plan("cover", estimatedSeconds: 0.2 + coverMB * (0.35 + 8 * 0.25))
        }
        if refines {
            // Two variants cover a third of the input each, the largest-segment one all of it (in
            // wholePoolPasses of ZDICT's).
            progress?.plan("refine", estimatedSeconds: 0.1 + (coverMB * 0.05 * (options.largestSegmentPoolFromAll ? 2.0 / 3 + Double(options.wholePoolPasses) / Double(DocumentFrequencyCover.zdictPasses) : 1) + Double(usageTotal) / 1_048_576 * 0.03 + validationMB * 0.2) * 1.5)
        }
        progress?.plan("choose", estimatedSeconds: 0.1 + validationMB * 0.4 * 2)
        if options.rebuildChosen {
            // One candidate's build again, on ~10 % more input (a refined one: its share of "refine";
            // the merge's vote round by every sample, ~1.5 × a variant's voters, replaces its second).
            progress?.plan("rebuild", estimatedSeconds: 0.1 + (refines
                ? (coverMB * 0.05 + Double(usageTotal) / 1_048_576 * 0.03) * 0.6
                    + (options.mergeRebuildWithChosen ? Double(usageTotal) / 1_048_576 * 0.03 * 0.25 : 0)
                : coverMB * 0.35))
        }

        // Candidates.
        // Each candidate with how to build it again from other samples (same method and parameters).
        typealias Rebuild = ([TrainingSample]) throws -> [UInt8]
        var built: [(method: String, detail: String, bytes: [UInt8], seconds: Double)] = []
        var rebuilds: [Rebuild] = []
        // The usage refiner's gap of each refined candidate, by index in `built`: its rebuild may be
        // merged with it (``DictionaryTrainingOptions/mergeRebuildWithChosen``).
        var refinedGaps: [Int: Int] = [:]
        var clock = Date()
        if fastCoverRuns {
            progress?.begin("fastCover")
            if options.effort == .default {
                // Too few samples to refine: one fastCover build at cover's parameters as the fallback.
                var parameters = coverParameters
                parameters.f = 20
                let content = try ZstdDictionaryBuilder.fastCover(buffer, targetSize: options.targetSize, parameters: parameters)
                built.append(("fastcover", parameters.description, content, Date().timeIntervalSince(clock)))
                rebuilds.append { samples in
                    try ZstdDictionaryBuilder.fastCover(TrainingBuffer(samples: samples, limits: options.limits),
                                                        targetSize: options.targetSize, parameters: parameters)
                }
            } else {
                let optimized = try ZstdDictionaryBuilder.optimizeFastCover(
                    buffer, targetSize: options.targetSize, d: fastD, steps: fastSteps)
                // The optimiser's dictionary was built on 75 % of the pieces; rebuild on all of them.
                let fastContent = buffer.pieceCount >= 20
                    ? try ZstdDictionaryBuilder.fastCover(buffer, targetSize: options.targetSize, parameters: optimized.parameters)
                    : optimized.content
                built.append(("fastcover", optimized.parameters.description, fastContent, Date().timeIntervalSince(clock)))
                rebuilds.append { samples in
                    try ZstdDictionaryBuilder.fastCover(TrainingBuffer(samples: samples, limits: options.limits),
                                                        targetSize: options.targetSize, parameters: optimized.parameters)
                }
            }
            progress?.end()
        }

        let newest = Self.newest(split.training)
        built.append(("newest-sample", newest.name, Array(newest.bytes.prefix(options.targetSize)), 0))
        rebuilds.append { samples in Array(Self.newest(samples).bytes.prefix(options.targetSize)) }

        // Score the candidates built so far (and plain zstd) on a second thread while cover runs:
        // each score is a pure function of its inputs, so the result does not depend on timing.
        let selectionLevel = options.selectionLevel
        let score: @Sendable ([UInt8]?) throws -> Int = { bytes in
            let dictionary = bytes.map { CompressionDictionary(bytes: $0) }
            var total = 0
            for sample in validation {
                total += try (dictionary.map { try DCZ.encode(sample, dictionary: $0, level: selectionLevel) }
                    ?? Zstd.encode(sample, level: selectionLevel)).count
            }
            return total
        }
        let early = built.map(\.bytes) as [[UInt8]?] + [nil]
        let earlyScores = ResultSlots<Int>(count: early.count)
        let group = DispatchGroup()
        defer { group.wait() }  // never leave the scoring thread running past a thrown error
        DispatchQueue.global().async(group: group) {
            for (i, bytes) in early.enumerated() {
                do { earlyScores.set(i, .success(try score(bytes))) } catch { earlyScores.set(i, .failure(error)) }
            }
        }

        var lateScores: [Int?] = []
        if options.effort != .fast {
            if options.effort == .max || !refines { progress?.begin("cover") }
            clock = Date()
            if options.effort == .max {
                let result = try ZstdDictionaryBuilder.optimizeCover(coverBuffer, targetSize: options.targetSize, d: 0, steps: 8)
                built.append(("cover", result.parameters.description, result.content, Date().timeIntervalSince(clock)))
                rebuilds.append { samples in
                    try ZstdDictionaryBuilder.cover(TrainingBuffer(samples: samples, limits: coverLimits),
                                                    targetSize: options.targetSize, parameters: result.parameters)
                }
                lateScores.append(nil)
            } else if !refines {
                let content = try ZstdDictionaryBuilder.cover(coverBuffer, targetSize: options.targetSize, parameters: coverParameters)
                built.append(("cover", coverParameters.description, content, Date().timeIntervalSince(clock)))
                rebuilds.append { samples in
                    try ZstdDictionaryBuilder.cover(TrainingBuffer(samples: samples, limits: coverLimits),
                                                    targetSize: options.targetSize, parameters: coverParameters)
                }
                lateScores.append(nil)
            }
            if options.effort == .max || !refines { progress?.end() }
            if refines {
                progress?.begin("refine")
                // The variants are independent pure functions of their inputs: run them side by side.
                let poolSize = options.targetSize * options.poolFactor
                let (targetSize, usageLevel) = (options.targetSize, options.usageLevel)
                let results = ResultSlots<RefinedVariant>(count: variants)
                DispatchQueue.concurrentPerform(iterations: variants) { variant in
                    results.set(variant, Result(catching: { () throws -> RefinedVariant in
                        let started = Date()
                        let (pool, refined) = try Self.refined(
                            variantInputs[variant], poolSize: poolSize, targetSize: targetSize,
                            parameters: variantParameters[variant], level: usageLevel)
                        let refinedSeconds = Date().timeIntervalSince(started)
                        return RefinedVariant(
                            pool: pool, refined: refined,
                            refinedSeconds: refinedSeconds, refinedScore: try score(refined))
                    }))
                    progress?.advance(to: results.completedFraction)
                }
                for variant in 0..<variants {
                    let result = try results.get(variant)
                    built.append((
                        "cover-refined",
                        "\(variantParameters[variant]) pool=\(result.pool) from "
                            + (variant == wholePoolVariant
                                ? "all samples" + (options.wholePoolPasses == DocumentFrequencyCover.zdictPasses ? "" : " (\(options.wholePoolPasses) passes)")
                                : "samples \(variant + 1)/\(variants)")
                            + ", votes from \(variantInputs[variant].voters.count)",
                        result.refined, result.refinedSeconds))
                    rebuilds.append { samples in
                        try Self.refined(
                            Self.refinedInputs(
                                samples, variants: variants, wholePoolVariant: wholePoolVariant, limits: coverLimits,
                                maxUsageBytes: options.maxUsageBytes, wholePoolPasses: options.wholePoolPasses, only: variant)[0],
                            poolSize: poolSize, targetSize: targetSize, parameters: variantParameters[variant], level: usageLevel,
                            rounds: options.mergeRebuildWithChosen ? 1 : 2).dictionary
                    }
                    refinedGaps[built.count - 1] = Self.refinedGap(k: variantParameters[variant].k)
                    lateScores.append(result.refinedScore)
                }
                progress?.end()
            }
        }

        // Choose on the validation set.
        progress?.begin("choose")
        var scores: [Int] = []
        for (candidate, known) in zip(built.dropFirst(early.count - 1), lateScores) {
            scores.append(try known ?? score(candidate.bytes))
        }
        group.wait()
        let plain = try earlyScores.get(early.count - 1)
        scores = try (0..<(early.count - 1)).map { try earlyScores.get($0) } + scores
        var candidates: [TrainingCandidate] = []
        for (candidate, total) in zip(built, scores) {
            candidates.append(TrainingCandidate(
                method: candidate.method, detail: candidate.detail, bytes: candidate.bytes, validationBytes: total,
                seconds: candidate.seconds))
        }
        progress?.end()
        var bestIndex = 0
        for (i, candidate) in candidates.enumerated().dropFirst() where candidate.validationBytes < candidates[bestIndex].validationBytes {
            bestIndex = i
        }
        let best = candidates[bestIndex]

        // The final dictionary: the chosen method and parameters once more, on every sample outside the
        // held-out set (validation only chose; it adds pages to learn from).
        var dictionary = best.bytes
        var rebuiltFrom: Int?
        var rebuildSeconds = 0.0
        var merged = false
        if options.rebuildChosen && !split.validation.isEmpty {
            progress?.begin("rebuild")
            clock = Date()
            // A rebuild that fails (or gives nothing) leaves the chosen candidate as it was built.
            if let rebuilt = try? rebuilds[bestIndex](split.outsideHeldOut), !rebuilt.isEmpty {
                dictionary = rebuilt
                rebuiltFrom = split.outsideHeldOut.count
                if options.mergeRebuildWithChosen, let gap = refinedGaps[bestIndex] {
                    let voters = Self.leadingBytes(split.outsideHeldOut, maxBytes: options.maxUsageBytes)
                    // The rebuild last: pool bytes left unselected fill from the pool's end.
                    // A cut that fails leaves the rebuild.
                    if let cut = try? DictionaryUsageRefiner.cut(
                        pool: best.bytes + rebuilt, samples: voters, targetSize: options.targetSize,
                        level: options.usageLevel, gap: gap), !cut.isEmpty {
                        dictionary = cut
                        merged = true
                    }
                }
            }
            rebuildSeconds = Date().timeIntervalSince(clock)
            progress?.end()
        }
        var result = TrainingResult(
            dictionary: dictionary, chosen: best, candidates: candidates, split: split,
            trainingBuffer: (buffer.pieceCount, buffer.bytes.count, buffer.splitSamples, buffer.capped),
            validationBytesWithoutDictionary: plain, selectionLevel: options.selectionLevel,
            rebuiltFromSamples: rebuiltFrom, rebuildSeconds: rebuildSeconds)
        result.mergedWithChosen = merged
        return result
    }

    /// The most recently modified sample (ties: the larger, then the first by name): the
    /// `newest-sample` candidate.
    static func newest(_ samples: [TrainingSample]) -> TrainingSample {
        samples.max { a, b in
            let (ta, tb) = (a.modified ?? .distantPast, b.modified ?? .distantPast)
            if ta != tb { return ta < tb }
            if a.bytes.count != b.bytes.count { return a.bytes.count < b.bytes.count }
            return a.name > b.name
        }!
    }

    /// The cover parameters of each refined variant: d = 8, k from
    /// ``DictionaryTrainingOptions/refinedSegmentSizes`` (cycled), each at least 16.
    static func variantParameters(_ options: DictionaryTrainingOptions, variants: Int) -> [ZstdDictionaryBuilder.Parameters] {
        let sizes = options.refinedSegmentSizes.flatMap { $0.isEmpty ? nil : $0 }
            ?? DictionaryTrainingOptions.defaultRefinedSegmentSizes(targetSize: options.targetSize)
        return (0..<variants).map { ZstdDictionaryBuilder.Parameters(k: max(16, sizes[$0 % sizes.count]), d: 8) }
    }

    /// For each refined variant, the other samples (up to `maxBytes`, in order): they vote on its pool.
    static func voters(_ samples: [TrainingSample], variants: Int, maxBytes: Int) -> [[[UInt8]]] {
        (0..<variants).map { variant in
            leadingBytes(samples.enumerated().lazy.filter { $0.offset % variants != variant }.map(\.element), maxBytes: maxBytes)
        }
    }

    /// The bytes of `samples` in order, up to the first one that reaches `maxBytes` in all.
    static func leadingBytes(_ samples: some Sequence<TrainingSample>, maxBytes: Int) -> [[UInt8]] {
        var chosen: [[UInt8]] = []
        var total = 0
        for sample in samples where total < maxBytes {
            chosen.append(sample.bytes)
            total += sample.bytes.count
        }
        return chosen
    }

    /// The variant with the largest segment size (the first of equals): the one whose pool is cut
    /// from every training sample (``DictionaryTrainingOptions/largestSegmentPoolFromAll``).
    public static func largestSegmentVariant(_ parameters: [ZstdDictionaryBuilder.Parameters]) -> Int? {
        parameters.indices.max { parameters[$0].k != parameters[$1].k ? parameters[$0].k < parameters[$1].k : $0 > $1 }
    }

    /// What one refined variant is built from: the pool's input (with the sample each piece came
    /// from, as an index into the samples given), the voters and, when the pool may contain the
    /// voters' own bytes, their indices (votes then leave out each byte's own sample), and the cover's passes.
    struct RefinedInput: Sendable {
        let buffer: TrainingBuffer
        let passes: Int
        let pieceSamples: [Int32]
        let voters: [[UInt8]]
        let voterSamples: [Int32]?
    }

    /// For each refined variant `v` of `variants` (or only `only`): its pool input, the samples whose
    /// index is `v` modulo `variants` (every sample for `wholePoolVariant`; `whole`, when given, is
    /// that buffer already built from `samples`, cut in `wholePoolPasses`), and its voters, the other
    /// samples (up to `maxUsageBytes`, in order).
    static func refinedInputs(
        _ samples: [TrainingSample], variants: Int, wholePoolVariant: Int?, limits: TrainingSampleLimits,
        maxUsageBytes: Int, wholePoolPasses: Int = DocumentFrequencyCover.zdictPasses, only: Int? = nil, whole: TrainingBuffer? = nil
    ) -> [RefinedInput] {
        (only.map { [$0] } ?? Array(0..<variants)).map { variant in
            let buffer: TrainingBuffer
            let pieceSamples: [Int32]
            let fromAll = variant == wholePoolVariant
            if fromAll {
                buffer = whole ?? TrainingBuffer(samples: samples, limits: limits)
                pieceSamples = buffer.pieceSamples.map { Int32($0) }
            } else {
                let members = samples.indices.filter { $0 % variants == variant }
                buffer = TrainingBuffer(samples: members.map { samples[$0] }, limits: limits)
                pieceSamples = buffer.pieceSamples.map { Int32(members[$0]) }
            }
            var voters: [[UInt8]] = []
            var voterSamples: [Int32] = []
            var total = 0
            for (i, sample) in samples.enumerated() where i % variants != variant && total < maxUsageBytes {
                voters.append(sample.bytes)
                voterSamples.append(Int32(i))
                total += sample.bytes.count
            }
            return RefinedInput(buffer: buffer, passes: fromAll ? wholePoolPasses : DocumentFrequencyCover.zdictPasses, pieceSamples: pieceSamples, voters: voters, voterSamples: fromAll ? voterSamples : nil)
        }
    }

    /// One `cover-refined` dictionary: a ``DocumentFrequencyCover`` pool of `poolSize` from the input's
    /// buffer, cut to `targetSize` by the votes of its voters (``DictionaryUsageRefiner``), bridging
    /// gaps of ``refinedGap(k:)`` bytes.
    static func refined(
        _ input: RefinedInput, poolSize: Int, targetSize: Int,
        parameters: ZstdDictionaryBuilder.Parameters, level: Int, rounds: Int = 2
    ) throws(TrainingError) -> (pool: Int, dictionary: [UInt8]) {
        let segments = DocumentFrequencyCover.segments(
            input.buffer, targetSize: poolSize, k: parameters.k, d: parameters.d, passes: input.passes)
        var pool: [UInt8] = []
        pool.reserveCapacity(poolSize)
        for segment in segments { pool.append(contentsOf: input.buffer.bytes[segment]) }
        let origins = input.voterSamples.map { _ in input.buffer.pieceOrigins(of: segments).map { input.pieceSamples[Int($0)] } }
        return (pool.count, try DictionaryUsageRefiner.refine(
            pool: pool, origins: origins, samples: input.voters, sampleIDs: input.voterSamples, targetSize: targetSize,
            level: level, gap: refinedGap(k: parameters.k), rounds: rounds))
    }

    /// Gap the usage refiner bridges between used runs: k / 64, clamped to 4...16 (at 100 KiB: 8 for
    /// k = 512, 16 for the larger segment sizes). Measured on the PostgreSQL manual's held-out pages:
    /// 8 beat 16 and 32 at k = 512; git's manual pages at k = 8192 kept 16.
    public static func refinedGap(k: Int) -> Int { max(4, min(16, k / 64)) }
}

/// What one refined variant produced (see ``DictionaryTrainer``).
private struct RefinedVariant: Sendable {
    let pool: Int
    let refined: [UInt8]
    let refinedSeconds: Double
    let refinedScore: Int
}

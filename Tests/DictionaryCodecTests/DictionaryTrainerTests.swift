@testable import DictionaryCodec
import Foundation
import Testing

/// Deterministic HTML-like samples sharing a template.
private func samples(_ count: Int, seed: UInt64 = 1) -> [TrainingSample] {
    var state = seed
    func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
    let words = ["alpha", "beta", "gamma", "delta", "window", "frame", "offset", "match", "brotli", "zstd", "cache"]
    return (0..<count).map { i in
        var body = ""
        for _ in 0..<(20 + Int(next() % 40)) { body += words[Int(next() % UInt64(words.count))] + " " }
        let page = "<html><head><title>Page \(i)</title><link rel=stylesheet href=/site.css></head><body>"
            + "<nav>Home · Docs · API</nav><main>\(body)</main><footer>© dcserve authors</footer></body></html>"
        return TrainingSample(name: "p\(i).html", bytes: Array(page.utf8))
    }
}

@Suite struct TrainingSplitTests {
    @Test func splitIsAPartitionAndDeterministic() throws {
        let input = samples(50)
        let a = try TrainingSplit(samples: input, heldOutFraction: 0.2, seed: 3)
        let b = try TrainingSplit(samples: input.reversed(), heldOutFraction: 0.2, seed: 3)
        #expect(a.heldOut.map(\.name) == b.heldOut.map(\.name))
        #expect(a.training.map(\.name) == b.training.map(\.name))
        let all = (a.training + a.validation + a.heldOut).map(\.name).sorted()
        #expect(all == input.map(\.name).sorted())
        #expect(a.heldOut.count == 10)
        #expect(a.validation.count == 4)
        let c = try TrainingSplit(samples: input, heldOutFraction: 0.2, seed: 4)
        #expect(c.heldOut.map(\.name) != a.heldOut.map(\.name))
    }

    /// Held-out fraction 0 (the caller keeps its own held-out set): no held-out samples, and
    /// `outsideHeldOut` is training + validation in name order.
    @Test func zeroHeldOutKeepsEverySampleForTrainingAndValidation() throws {
        let input = samples(50)
        let split = try TrainingSplit(samples: input, heldOutFraction: 0, seed: 3)
        #expect(split.heldOut.isEmpty)
        #expect(split.validation.count == 5 && split.training.count == 45)
        #expect(split.outsideHeldOut.map(\.name) == input.map(\.name).sorted())
        let withHeldOut = try TrainingSplit(samples: input, heldOutFraction: 0.2, seed: 3)
        #expect(Set(withHeldOut.outsideHeldOut.map(\.name)) == Set((withHeldOut.training + withHeldOut.validation).map(\.name)))
        #expect(throws: TrainingError.heldOutFractionOutOfRange(-0.1)) {
            try TrainingSplit(samples: input, heldOutFraction: -0.1, seed: 0)
        }
    }

    @Test func badInputsAreTypedErrors() {
        #expect(throws: TrainingError.noSamples) { try TrainingSplit(samples: [], heldOutFraction: 0.2, seed: 0) }
        #expect(throws: TrainingError.tooFewSamples(found: 4, required: 10)) {
            try TrainingSplit(samples: samples(4), heldOutFraction: 0.2, seed: 0)
        }
        let tiny = (0..<20).map { TrainingSample(name: "t\($0)", bytes: [1, 2, 3]) }
        #expect(throws: TrainingError.samplesTooSmall(count: 20, minimumSize: 32)) {
            try TrainingSplit(samples: tiny, heldOutFraction: 0.2, seed: 0)
        }
        #expect(throws: TrainingError.heldOutFractionOutOfRange(1.5)) {
            try TrainingSplit(samples: samples(20), heldOutFraction: 1.5, seed: 0)
        }
    }

    @Test func piecesKnowTheirSampleAndRangesTheirPieces() {
        var limits = TrainingSampleLimits()
        limits.trainingChunkSize = 1000
        let input = [
            TrainingSample(name: "a", bytes: Array(repeating: 1, count: 2500)),
            TrainingSample(name: "b", bytes: Array(repeating: 2, count: 300)),
        ]
        let buffer = TrainingBuffer(samples: input, limits: limits)
        #expect(buffer.pieceSizes == [1000, 1000, 500, 300])
        #expect(buffer.pieceSamples == [0, 0, 0, 1])
        #expect(buffer.pieceOrigins(of: [998..<1001, 2499..<2501]) == [0, 0, 1, 2, 3])
        #expect(buffer.pieceOrigins(of: []) == [])
    }

    @Test func largeSamplesAreSplitIntoPieces() {
        var limits = TrainingSampleLimits()
        limits.trainingChunkSize = 1000
        let buffer = TrainingBuffer(samples: [TrainingSample(name: "big", bytes: Array(repeating: 7, count: 2500))], limits: limits)
        #expect(buffer.pieceSizes == [1000, 1000, 500])
        #expect(buffer.splitSamples == 1)
    }
}

@Suite struct DictionaryTrainerTests {
    @Test func trainsARawDeterministicDictionaryThatHelps() throws {
        var options = DictionaryTrainingOptions()
        options.targetSize = 4096
        let input = samples(120)
        let first = try DictionaryTrainer.train(samples: input, options: options)
        let second = try DictionaryTrainer.train(samples: input.shuffled(), options: options)
        #expect(first.dictionary == second.dictionary)
        #expect(first.dictionary.count <= 4096 && first.dictionary.count > 0)
        #expect(!ZstdDictionaryBuilder.hasZstdDictionaryMagic(first.dictionary))
        // default effort with enough samples: newest sample and three refined variants.
        #expect(first.candidates.map(\.method) == ["newest-sample", "cover-refined", "cover-refined", "cover-refined"])
        #expect(first.chosen.validationBytes == first.candidates.map(\.validationBytes).min())

        let evaluation = try DictionaryEvaluation.evaluate(dictionary: first.dictionary, samples: first.split.heldOut.map(\.bytes))
        let dcz = try #require(evaluation.measurement(.dcz, level: 19))
        let zstd = try #require(evaluation.measurement(.zstd, level: 19))
        #expect(dcz.bytes < zstd.bytes)
        #expect(evaluation.measurements.count == 7)
        // Every held-out response round-trips through the dictionary codings.
        let dictionary = CompressionDictionary(bytes: first.dictionary)
        for sample in first.split.heldOut {
            let body = try DCZ.encode(sample.bytes, dictionary: dictionary, level: 19)
            #expect(try DCZ.decode(body, dictionary: dictionary, maxOutput: 1 << 20) == sample.bytes)
        }
    }

    @Test func refinedVariantsEachTryTheirOwnSegmentSize() throws {
        #expect(DictionaryTrainingOptions.defaultRefinedSegmentSizes(targetSize: 100 * 1024) == [512, 2048, 8192])
        #expect(DictionaryTrainingOptions.defaultRefinedSegmentSizes(targetSize: 4096) == [64, 81, 327])
        #expect(DictionaryTrainingOptions.defaultRefinedSegmentSizes(targetSize: 16 << 20) == [16384, 16384, 16384])
        var options = DictionaryTrainingOptions()
        options.targetSize = 4096
        let input = samples(120)
        let defaults = try DictionaryTrainer.train(samples: input, options: options)
        let refined = defaults.candidates.filter { $0.method == "cover-refined" }.map(\.detail)
        #expect(refined.count == 3)
        for (detail, k) in zip(refined, [64, 81, 327]) { #expect(detail.hasPrefix("k=\(k) d=8 ")) }
        // Validation still picks the smallest; the chosen candidate names its segment size.
        #expect(defaults.chosen.validationBytes == defaults.candidates.map(\.validationBytes).min())

        options.refinedSegmentSizes = [100, 200]  // cycled over the three variants
        let custom = try DictionaryTrainer.train(samples: input, options: options)
        let customDetails = custom.candidates.filter { $0.method == "cover-refined" }.map(\.detail)
        for (detail, k) in zip(customDetails, [100, 200, 100]) { #expect(detail.hasPrefix("k=\(k) d=8 ")) }
        #expect(try DictionaryTrainer.train(samples: input.reversed(), options: options).dictionary == custom.dictionary)
    }

    /// The largest-segment variant cuts its pool from every training sample; the others from their
    /// third, in two cover passes instead of four. Its voters stay the other two thirds. Switched off,
    /// every variant uses its third.
    @Test func largestSegmentVariantPoolsEveryTrainingSample() throws {
        var options = DictionaryTrainingOptions()
        options.targetSize = 4096
        let input = samples(120)
        let result = try DictionaryTrainer.train(samples: input, options: options)
        let details = result.candidates.filter { $0.method == "cover-refined" }.map(\.detail)
        let training = result.split.training.count
        #expect(details.count == 3)
        #expect(details[0].contains("from samples 1/3") && details[1].contains("from samples 2/3"))
        #expect(details[2].hasPrefix("k=327 d=8 ") && details[2].contains("from all samples (2 passes)"))
        #expect(details[2].hasSuffix("votes from \(training - training / 3)"))
        #expect(try DictionaryTrainer.train(samples: input.reversed(), options: options).dictionary == result.dictionary)
        options.wholePoolPasses = DocumentFrequencyCover.zdictPasses  // as the other variants
        let fourPasses = try DictionaryTrainer.train(samples: input, options: options)
        #expect(fourPasses.candidates.filter { $0.method == "cover-refined" }.map(\.detail)[2].contains("from all samples, votes"))
        options.largestSegmentPoolFromAll = false
        let thirds = try DictionaryTrainer.train(samples: input, options: options)
        #expect(thirds.candidates.filter { $0.method == "cover-refined" }.map(\.detail)[2].contains("from samples 3/3"))
        #expect(DictionaryTrainer.largestSegmentVariant([.init(k: 64, d: 8), .init(k: 327, d: 8), .init(k: 327, d: 8)]) == 1)
        #expect(DictionaryTrainer.refinedGap(k: 512) == 8 && DictionaryTrainer.refinedGap(k: 8192) == 16 && DictionaryTrainer.refinedGap(k: 64) == 4)
    }

    @Test func fewTrainingSamplesFallBackToFastCoverAndCover() throws {
        var options = DictionaryTrainingOptions()
        options.targetSize = 2048
        let result = try DictionaryTrainer.train(samples: samples(20), options: options)
        #expect(result.candidates.map(\.method) == ["fastcover", "newest-sample", "cover"])
        #expect(!ZstdDictionaryBuilder.hasZstdDictionaryMagic(result.dictionary))
    }

    @Test func rawContentStripsTheZstdHeader() throws {
        var buffer = TrainingBuffer(samples: samples(60))
        let optimized = try ZstdDictionaryBuilder.optimizeFastCover(buffer, targetSize: 2048, d: 8, steps: 2)
        #expect(optimized.content.count <= 2048)
        #expect(!ZstdDictionaryBuilder.hasZstdDictionaryMagic(optimized.content))
        buffer = TrainingBuffer(samples: [])
        #expect(throws: TrainingError.self) { try ZstdDictionaryBuilder.cover(buffer, targetSize: 2048, parameters: .init(k: 200, d: 8)) }
    }

    /// The chosen method is built once more from training + validation samples; the held-out set
    /// never reaches it. Without the rebuild the result is the chosen candidate's own bytes.
    @Test func finalDictionaryIsRebuiltFromEverySampleOutsideTheHeldOutSet() throws {
        var options = DictionaryTrainingOptions()
        options.targetSize = 4096
        let input = samples(120)
        let rebuilt = try DictionaryTrainer.train(samples: input, options: options)
        #expect(rebuilt.rebuiltFromSamples == rebuilt.split.outsideHeldOut.count)
        #expect(rebuilt.split.outsideHeldOut.count == rebuilt.split.training.count + rebuilt.split.validation.count)
        #expect(rebuilt.dictionary.count > 0 && rebuilt.dictionary.count <= 4096)
        options.rebuildChosen = false
        let plain = try DictionaryTrainer.train(samples: input, options: options)
        #expect(plain.rebuiltFromSamples == nil && plain.dictionary == plain.chosen.bytes)
        #expect(plain.chosen.isSame(as: rebuilt.chosen))
        // The rebuild is the chosen refined variant on more samples: different bytes, same method.
        #expect(rebuilt.dictionary != plain.dictionary)
        // Held-out samples cannot influence it: changing them leaves the dictionary as it is.
        let heldOut = Set(rebuilt.split.heldOut.map(\.name))
        let altered = input.map { s in
            heldOut.contains(s.name) ? TrainingSample(name: s.name, bytes: Array("unrelated \(s.name) ".utf8) + s.bytes.reversed()) : s
        }
        options.rebuildChosen = true
        #expect(try DictionaryTrainer.train(samples: altered, options: options).dictionary == rebuilt.dictionary)
    }

    /// A chosen refined candidate and its rebuild (the refiner's first round only) are cut together to
    /// the target by the votes of every sample outside the held-out set (candidate first, rebuild
    /// last); without the option the final dictionary is the two-round rebuild alone.
    @Test func finalRefinedDictionaryIsCutFromTheCandidateAndItsRebuild() throws {
        var options = DictionaryTrainingOptions()
        options.targetSize = 4096
        let input = samples(120)
        let merged = try DictionaryTrainer.train(samples: input, options: options)
        #expect(merged.chosen.method == "cover-refined" && merged.mergedWithChosen)
        options.mergeRebuildWithChosen = false
        let rebuilt = try DictionaryTrainer.train(samples: input, options: options)
        #expect(!rebuilt.mergedWithChosen && rebuilt.rebuiltFromSamples == merged.rebuiltFromSamples)
        #expect(rebuilt.chosen.isSame(as: merged.chosen))
        let k = try #require(merged.chosen.detail.split(separator: " ").first.flatMap { Int($0.dropFirst(2)) })
        let parameters = DictionaryTrainer.variantParameters(options, variants: 3)
        let variant = try #require(parameters.firstIndex { $0.k == k })
        var coverLimits = options.limits
        coverLimits.maxTrainingBytes = min(options.limits.maxTrainingBytes, options.maxCoverBytes)
        let rebuildInput = DictionaryTrainer.refinedInputs(
            merged.split.outsideHeldOut, variants: 3, wholePoolVariant: DictionaryTrainer.largestSegmentVariant(parameters),
            limits: coverLimits, maxUsageBytes: options.maxUsageBytes, wholePoolPasses: options.wholePoolPasses, only: variant)[0]
        let firstRound = try DictionaryTrainer.refined(
            rebuildInput, poolSize: 4096 * options.poolFactor, targetSize: 4096, parameters: parameters[variant],
            level: options.usageLevel, rounds: 1).dictionary
        let expected = try DictionaryUsageRefiner.cut(
            pool: merged.chosen.bytes + firstRound, samples: merged.split.outsideHeldOut.map(\.bytes),
            targetSize: 4096, level: options.usageLevel, gap: DictionaryTrainer.refinedGap(k: k))
        #expect(merged.dictionary == expected)
        #expect(merged.dictionary != rebuilt.dictionary && merged.dictionary.count <= 4096)
    }

    @Test func progressReachesOneAndEstimates() {
        let progress = TrainingProgress()
        progress.plan("a", estimatedSeconds: 1)
        progress.plan("b", estimatedSeconds: 3)
        progress.begin("a")
        progress.end()
        progress.begin("b")
        progress.advance(to: 0.5)
        let mid = progress.snapshot()
        #expect(mid.stage == "b" && mid.stageIndex == 2 && mid.stageCount == 2)
        #expect(abs(mid.fraction - 2.5 / 4) < 1e-9)
        #expect(mid.remaining != nil)
        progress.finish()
        #expect(progress.snapshot().fraction == 1)
    }
}

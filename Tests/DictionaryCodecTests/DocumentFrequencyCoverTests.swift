import DictionaryCodec
import Testing

@Suite struct DocumentFrequencyCoverTests {
    @Test func prefersWhatManyPiecesShareOverWhatOnePieceRepeats() {
        let shared = Array("<div class=\"sphinxsidebar\" role=\"navigation\">".utf8)  // in 20 pieces, once each
        let repeated = Array("SELECT attname FROM pg_attribute WHERE attrelid".utf8)  // 100 times in one piece
        var samples = (0..<20).map {
            TrainingSample(name: "s\($0)", bytes: noise(300, seed: UInt32($0)) + shared + noise(300, seed: 100 + UInt32($0)))
        }
        samples.append(TrainingSample(name: "r", bytes: Array((0..<100).map { _ in repeated }.joined())))
        let input = TrainingBuffer(samples: samples)
        let dictionary = DocumentFrequencyCover.build(input, targetSize: 64, k: 64, d: 8)
        #expect(dictionary.count <= 64)
        let text = String(decoding: dictionary, as: UTF8.self)
        #expect(text.contains(String(decoding: shared, as: UTF8.self)))
        #expect(!text.contains("pg_attribute"))
        // Deterministic.
        #expect(DocumentFrequencyCover.build(input, targetSize: 64, k: 64, d: 8) == dictionary)
    }

    @Test func bestSegmentsEndTheDictionaryAndTheSizeIsBounded() {
        let best = Array("<footer>© dcserve authors · built with sphinx</footer>".utf8)  // in all 30 pieces
        let good = Array("<nav>Home · Docs · API reference · Search</nav>".utf8)  // in 10 of them
        let samples = (0..<30).map { i in
            TrainingSample(name: "p\(i)", bytes: noise(500, seed: UInt32(i)) + (i % 3 == 0 ? good : []) + noise(500, seed: 50 + UInt32(i)) + best)
        }
        let input = TrainingBuffer(samples: samples)
        let dictionary = DocumentFrequencyCover.build(input, targetSize: 4000, k: 60, d: 8)
        #expect(dictionary.count <= 4000 && dictionary.count >= best.count + good.count)
        // The best segment (possibly with a few neighbouring bytes) is the last one.
        #expect(String(decoding: dictionary.suffix(best.count + 8), as: UTF8.self).contains(String(decoding: best, as: UTF8.self)))
        #expect(String(decoding: dictionary, as: UTF8.self).contains(String(decoding: good, as: UTF8.self)))
        #expect(DocumentFrequencyCover.build(TrainingBuffer(samples: []), targetSize: 4000, k: 60) == [])
    }

    /// `passes` sets how many epochs the input is cut into (targetSize / k / passes): with one pass
    /// every epoch gives one segment; with ZDICT's four, fewer epochs give several each.
    @Test func passesSetTheEpochs() {
        let samples = (0..<40).map { TrainingSample(name: "n\($0)", bytes: noise(1000, seed: 300 + UInt32($0))) }
        let input = TrainingBuffer(samples: samples)
        let one = DocumentFrequencyCover.segments(input, targetSize: 1000, k: 100, d: 8, passes: 1)
        let four = DocumentFrequencyCover.segments(input, targetSize: 1000, k: 100, d: 8)
        let epochSize = (input.bytes.count - 7) / 10
        #expect(Set(one.map { $0.lowerBound / epochSize }).count == 10)
        #expect(Set(four.map { $0.lowerBound / (epochSize * 5) }).count == 2)
        #expect(one.reduce(0) { $0 + $1.count } <= 1000 && four.reduce(0) { $0 + $1.count } <= 1000)
        #expect(four == DocumentFrequencyCover.segments(input, targetSize: 1000, k: 100, d: 8, passes: 4))
    }
}

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
}

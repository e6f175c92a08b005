import DictionaryCodec
import Foundation
import Testing
import TestSupport

@Suite struct CompressionDictionaryTests {
    @Test func holdsBytesAndHash() {
        let bytes = TestBytes.text(1000, seed: 1)
        let dictionary = CompressionDictionary(bytes: bytes)
        #expect(dictionary.bytes == bytes)
        #expect(dictionary.count == 1000)
        #expect(dictionary.hash == SHA256.hash(bytes))
        #expect(CompressionDictionary(bytes: bytes, expectedHash: dictionary.hash) != nil)
        #expect(CompressionDictionary(bytes: bytes + [0], expectedHash: dictionary.hash) == nil)
        #expect(CompressionDictionary(bytes: [UInt8]()).count == 0)
    }

    @Test func defaultLevelsAndClamping() {
        #expect(ContentCoding.dcz.defaultLevel(.onTheFly) == 3 && ContentCoding.dcz.defaultLevel(.precompressed) == 19)
        #expect(ContentCoding.dcb.defaultLevel(.onTheFly) == 5 && ContentCoding.dcb.defaultLevel(.precompressed) == 11)
        #expect(ContentCoding.br.defaultLevel(.onTheFly) == 5 && ContentCoding.br.defaultLevel(.precompressed) == 11)
        #expect(ContentCoding.zstd.defaultLevel(.onTheFly) == 3 && ContentCoding.zstd.defaultLevel(.precompressed) == 19)
        #expect(ContentCoding.gzip.defaultLevel(.onTheFly) == 6)
        #expect(ContentCoding.dcb.effectiveLevel(1) == 5)
        #expect(ContentCoding.dcb.effectiveLevel(99) == 11)
        #expect(ContentCoding.br.effectiveLevel(1) == 1)
        #expect(ContentCoding.gzip.effectiveLevel(12) == 9)
    }

    @Test func dcbBelowQualityFiveStillUsesTheDictionary() throws {
        // Quality is raised to 5, so a body that is a copy of the dictionary compresses to almost nothing.
        let bytes = TestBytes.random(100_000, seed: 9)
        let dictionary = CompressionDictionary(bytes: bytes)
        let body = try DCB.encode(bytes, dictionary: dictionary, level: 1)
        #expect(body.count < 200)
        #expect(try DCB.decode(body, dictionary: dictionary, maxOutput: bytes.count) == bytes)
    }

    @Test func concurrentEncodersShareOneDictionary() async throws {
        let base = TestBytes.text(300_000, seed: 21)
        let dictionary = CompressionDictionary(bytes: base)
        let inputs = (0..<16).map { TestBytes.revision(of: base, count: 100_000, seed: UInt64(100 + $0)) }
        let results = try await withThrowingTaskGroup(of: (Int, Bool).self) { group in
            for (i, input) in inputs.enumerated() {
                group.addTask {
                    let coding: ContentCoding = i % 2 == 0 ? .dcz : .dcb
                    let level = i % 4 < 2 ? coding.defaultLevel(.onTheFly) : coding.defaultLevel(.onTheFly) + 1
                    let body = try coding.encode(input, dictionary: dictionary, level: level)
                    let back = try coding.decode(body, dictionary: dictionary)
                    return (i, back == input && body.count < input.count / 5)
                }
            }
            var all: [Int: Bool] = [:]
            for try await (i, ok) in group { all[i] = ok }
            return all
        }
        #expect(results.count == 16 && results.values.allSatisfy { $0 })
    }

    @Test func preparedFormsOutliveTheCallersReference() throws {
        var encoder: (any ContentEncoder)?
        do {
            let dictionary = CompressionDictionary(bytes: TestBytes.random(10_000, seed: 4))
            try dictionary.prepare(for: .dcb, level: 5)
            encoder = try ContentCoding.dcb.makeEncoder(dictionary: dictionary, level: 5)
            dictionary.discardPreparedForms()
        }
        // The dictionary object is only referenced by the encoder now; encoding must still work.
        var body = try encoder!.update(TestBytes.random(100, seed: 4))
        body += try encoder!.finish()
        #expect(body.count > 36)
    }
}

/// Found by the decode fuzzer: prepared forms referenced their dictionary, which caches
/// them, so a dictionary that was ever used was never freed.
@Suite struct CompressionDictionaryLifetimeTests {
    @Test func aPreparedDictionaryIsFreedWithItsLastReference() throws {
        weak var weakDictionary: CompressionDictionary?
        do {
            let dictionary = CompressionDictionary(bytes: Array("a dictionary that is prepared for every coding\n".utf8))
            weakDictionary = dictionary
            try dictionary.prepare(for: .dcz, level: 3)
            try dictionary.prepare(for: .dcb, level: 5)
            let body = try ContentCoding.dcz.encode(Array("a dictionary that is used".utf8), dictionary: dictionary, level: 3)
            #expect(try ContentCoding.dcz.decode(body, dictionary: dictionary) == Array("a dictionary that is used".utf8))
        }
        #expect(weakDictionary == nil)
    }
}

/// A dictionary used once or twice (a live version) is referenced as the frame's prefix: no CDict is
/// built, and the frame is the same raw-content dcz any decoder holding the bytes decodes.
@Suite struct PrefixDictionaryTests {
    @Test func dczAgainstAPrefixDecodesLikeAgainstACDictAndBuildsNone() throws {
        let base = TestBytes.text(50_000, seed: 31)
        let body = TestBytes.revision(of: base, count: 50_000, seed: 32)
        let prefix = CompressionDictionary(bytes: base, knownHash: SHA256.hash(base), prefersPrefix: true)
        let encoded = try DCZ.encode(body, dictionary: prefix, level: 3)
        #expect(prefix.preparedByteCount == 0)
        let viaCDict = try DCZ.encode(body, dictionary: CompressionDictionary(bytes: base), level: 3)
        #expect(encoded.count < body.count / 4 && encoded.count <= viaCDict.count + viaCDict.count / 5,
                "\(encoded.count) vs \(viaCDict.count) via a CDict")
        #expect(Array(encoded.prefix(DCZ.headerLength)) == Array(viaCDict.prefix(DCZ.headerLength)))
        // Our decoder with a raw-content DDict, and the zstd CLI with the bytes as its dictionary.
        #expect(try DCZ.decode(encoded, dictionary: CompressionDictionary(bytes: base), maxOutput: body.count) == body)
        let dir = uniqueTemporaryURL("prefix")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        try Data(base).write(to: dir.appendingPathComponent("dict"))
        try Data(encoded).write(to: dir.appendingPathComponent("body.dcz"))
        let zstd = Process()
        zstd.executableURL = URL(fileURLWithPath: "/usr/bin/zstd")
        zstd.arguments = ["-q", "-d", "-f", "-D", dir.appendingPathComponent("dict").path, dir.appendingPathComponent("body.dcz").path,
                          "-o", dir.appendingPathComponent("body").path]
        try zstd.run()
        zstd.waitUntilExit()
        #expect(zstd.terminationStatus == 0)
        #expect(try Data(contentsOf: dir.appendingPathComponent("body")) == Data(body))
        // Once a CDict exists (prepared for repeated use), it is used instead.
        try prefix.prepare(for: .dcz, level: 3)
        #expect(try DCZ.decode(try DCZ.encode(body, dictionary: prefix, level: 3), dictionary: prefix, maxOutput: body.count) == body)
    }
}

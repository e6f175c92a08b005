import DictionaryCodec
import Testing

@Suite struct DictionaryUsageRefinerTests {
    @Test func votesCountSamplesThatCopyPoolBytes() throws {
        let phrase = Array("<div class=\"sphinxsidebarwrapper\"><h3>Navigation</h3><ul><li>Index</li></ul></div>".utf8)
        let pool = noise(2000, seed: 1) + phrase + noise(2000, seed: 2)
        // Three samples contain the phrase (once or twice); one does not.
        let samples = [
            noise(500, seed: 10) + phrase + noise(500, seed: 11),
            phrase + noise(800, seed: 12) + phrase,
            noise(300, seed: 13) + phrase,
            noise(900, seed: 14),
        ]
        let votes = try DictionaryUsageRefiner.usage(of: pool, samples: samples, level: 9)
        #expect(votes.count == pool.count)
        let phraseVotes = votes[2000..<(2000 + phrase.count)]
        #expect(phraseVotes.allSatisfy { $0 == 3 })  // one vote per sample, however often it copies
        #expect(votes[..<1990].allSatisfy { $0 == 0 })
        #expect(votes[(2010 + phrase.count)...].allSatisfy { $0 == 0 })
    }

    @Test func selectKeepsTheMostUsedSegmentsMostUsedLastAndFillsTheBudget() {
        let pool = (0..<300).map { UInt8($0 % 251) }
        var usage = [UInt32](repeating: 0, count: 300)
        for i in 20..<40 { usage[i] = 9 }  // strongly used
        for i in 100..<130 { usage[i] = 5 }  // used
        for i in 200..<260 { usage[i] = 1 }  // barely used
        let selected = DictionaryUsageRefiner.select(pool: pool, usage: usage, targetSize: 60, gap: 4)
        #expect(selected.count == 60)
        // The two used segments end the dictionary, the most used last; the rest is filler from the pool's end.
        #expect(Array(selected.suffix(50)) == Array(pool[100..<130]) + Array(pool[20..<40]))
        #expect(Array(selected.prefix(10)) == Array(pool[290..<300]))
        // A pool that already fits is returned unchanged.
        #expect(DictionaryUsageRefiner.select(pool: pool, usage: usage, targetSize: 300) == pool)
    }

    /// Segments are cut one vote below the highest threshold that fills the budget: two strongly used
    /// runs with a few bytes one voter short between them become one run, which outranks a barely
    /// used string; with no slack the runs stay apart and the string takes the rest of the budget.
    @Test func segmentsAreCutOneVoteBelowTheFillingThreshold() {
        let pool = (0..<300).map { UInt8($0 % 251) }
        var usage = [UInt32](repeating: 0, count: 300)
        for i in 20..<40 { usage[i] = 20 }
        for i in 40..<44 { usage[i] = 8 }
        for i in 44..<64 { usage[i] = 20 }
        for i in 200..<204 { usage[i] = 9 }  // 20 + 20 + 4 bytes at 9 votes or more fill the budget
        #expect(DictionaryUsageRefiner.select(pool: pool, usage: usage, targetSize: 44, gap: 2) == Array(pool[20..<64]))
        let strict = DictionaryUsageRefiner.select(pool: pool, usage: usage, targetSize: 44, gap: 2, slack: 0)
        #expect(strict.count == 44 && contains(strict, Array(pool[200..<204])) && !contains(strict, Array(pool[38..<46])))
    }

    @Test func measureCountsMatchesWhereTheirCopyStarts() throws {
        let phrase = Array("<div class=\"sphinxsidebarwrapper\"><h3>Navigation</h3><ul><li>Index</li></ul></div>".utf8)
        let pool = noise(2000, seed: 1) + phrase + noise(2000, seed: 2)
        let samples = [
            noise(500, seed: 10) + phrase + noise(500, seed: 11),
            noise(300, seed: 13) + phrase,
            noise(900, seed: 14),
        ]
        let measured = try DictionaryUsageRefiner.measure(pool, samples: samples, level: 9)
        #expect(measured.votes == (try DictionaryUsageRefiner.usage(of: pool, samples: samples, level: 9)))
        #expect(measured.references.count == pool.count)
        // Two samples copy the phrase once each; a match starts only where some sample copied.
        let phraseRange = 1990..<(2010 + phrase.count)
        #expect(measured.references[phraseRange].reduce(0, +) == 2)
        #expect(measured.references.indices.allSatisfy { measured.references[$0] == 0 || measured.votes[$0] > 0 })
    }

    /// Leave-source-out: a sample never votes for pool bytes cut from itself, however much it copies
    /// them; other samples' votes are unchanged.
    @Test func samplesDoNotVoteForBytesCutFromThemselves() throws {
        let phrase = Array("<div class=\"sphinxsidebarwrapper\"><h3>Navigation</h3><ul><li>Index</li></ul></div>".utf8)
        let own = Array("<p>Only the first sample says this, twice over, in its own words.</p>".utf8)
        let pool = noise(1000, seed: 1) + phrase + noise(1000, seed: 2) + own + noise(1000, seed: 3)
        let samples = [
            noise(400, seed: 10) + phrase + own + noise(100, seed: 11) + own,
            phrase + noise(700, seed: 12),
            noise(300, seed: 13) + phrase,
        ]
        let ownRange = (2000 + phrase.count)..<(2000 + phrase.count + own.count)
        // Every byte of `own` was cut from sample 7 (the first sample's id); the rest from other pages.
        var origins = [Int32](repeating: 99, count: pool.count)
        for i in ownRange { origins[i] = 7 }
        let ids: [Int32] = [7, 8, 9]
        let plain = try DictionaryUsageRefiner.measure(pool, samples: samples, level: 9)
        let leaveOut = try DictionaryUsageRefiner.measure(pool, samples: samples, level: 9, origins: origins, sampleIDs: ids)
        // The match boundaries may shift a byte or two; the sentence's interior is copied from the pool.
        let interior = (ownRange.lowerBound + 4)..<(ownRange.upperBound - 4)
        #expect(plain.votes[interior].allSatisfy { $0 == 1 })
        #expect(leaveOut.votes[ownRange].allSatisfy { $0 == 0 })
        #expect(leaveOut.references[ownRange].allSatisfy { $0 == 0 })
        let phraseRange = 1000..<(1000 + phrase.count)
        #expect(leaveOut.votes[phraseRange] == plain.votes[phraseRange])
        #expect(plain.votes[phraseRange].allSatisfy { $0 == 3 })
        // Without origins the leave-out refine is the plain one.
        let target = phrase.count + 40
        #expect(try DictionaryUsageRefiner.refine(pool: pool, origins: nil, samples: samples, sampleIDs: nil, targetSize: target, level: 9)
            == (try DictionaryUsageRefiner.refine(pool: pool, samples: samples, targetSize: target, level: 9)))
        // With them, the first sample's own sentence no longer earns a place in a tight budget.
        let refined = try DictionaryUsageRefiner.refine(
            pool: pool, origins: origins, samples: samples, sampleIDs: ids, targetSize: phrase.count, level: 9)
        #expect(refined.count == phrase.count)
        #expect(!contains(refined, Array(own.prefix(20))))
    }

    @Test func layoutPutsTheMostReferencedBytesLast() {
        let pool = (0..<300).map { UInt8($0 % 251) }
        var usage = [UInt32](repeating: 0, count: 300)
        var references = [UInt32](repeating: 0, count: 300)
        // A long run every sample copies once (a shared stylesheet): most votes, one match each.
        for i in 20..<80 { usage[i] = 9 }
        references[20] = 9
        // A short string copied many times per sample: fewer votes, most matches per byte.
        for i in 100..<110 { usage[i] = 5 }
        references[100] = 40
        let byVotes = DictionaryUsageRefiner.select(pool: pool, usage: usage, targetSize: 70, gap: 4)
        #expect(Array(byVotes) == Array(pool[100..<110]) + Array(pool[20..<80]))
        let byReferences = DictionaryUsageRefiner.select(pool: pool, usage: usage, references: references, targetSize: 70, gap: 4)
        #expect(Array(byReferences) == Array(pool[20..<80]) + Array(pool[100..<110]))
    }

    @Test func refineKeepsWhatSamplesCopyMostUsedLast() throws {
        let common = Array("<div class=\"related\" role=\"navigation\"><h3>Navigation</h3><ul><li>index</li>".utf8)
        let rarer = Array("<p class=\"admonition-title\">Note</p><div class=\"highlight-python3 notranslate\">".utf8)
        let pool = noise(3000, seed: 1) + rarer + noise(3000, seed: 2) + common + noise(3000, seed: 3)
        // Four samples copy `common`, two copy `rarer`.
        let samples = (0..<4).map { noise(400, seed: 20 + UInt32($0)) + common }
            + (0..<2).map { rarer + noise(400, seed: 30 + UInt32($0)) }
        let target = common.count + rarer.count + 40
        let refined = try DictionaryUsageRefiner.refine(pool: pool, samples: samples, targetSize: target, level: 9)
        #expect(refined.count == target)
        let text = String(decoding: refined, as: UTF8.self)
        let commonAt = try #require(text.range(of: String(decoding: common, as: UTF8.self)))
        let rarerAt = try #require(text.range(of: String(decoding: rarer, as: UTF8.self)))
        #expect(rarerAt.upperBound <= commonAt.lowerBound)
        #expect(try DictionaryUsageRefiner.refine(pool: common, samples: samples, targetSize: target, level: 9) == common)
    }

    /// Two dictionaries end to end, cut to one's size by one round of votes: what the samples copy from
    /// either stays, the bytes nobody copies go; a pool that already fits is returned as it is.
    @Test func cutKeepsWhatSamplesCopyFromEitherDictionary() throws {
        let first = Array("<div class=\"related\" role=\"navigation\"><h3>Navigation</h3><ul><li>index</li>".utf8)
        let second = Array("<p class=\"admonition-title\">Note</p><div class=\"highlight-python3 notranslate\">".utf8)
        let a = noise(600, seed: 1) + first
        let b = noise(600, seed: 2) + second
        let samples = (0..<3).map { noise(400, seed: 20 + UInt32($0)) + first }
            + (0..<3).map { second + noise(400, seed: 30 + UInt32($0)) }
        let target = a.count
        let cut = try DictionaryUsageRefiner.cut(pool: a + b, samples: samples, targetSize: target, level: 9, gap: 8)
        #expect(cut.count == target)
        #expect(contains(cut, first) && contains(cut, second))
        #expect(try DictionaryUsageRefiner.cut(pool: a, samples: samples, targetSize: target, level: 9) == a)
    }
}

private func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
    guard needle.count <= haystack.count else { return false }
    return (0...(haystack.count - needle.count)).contains { Array(haystack[$0..<($0 + needle.count)]) == needle }
}

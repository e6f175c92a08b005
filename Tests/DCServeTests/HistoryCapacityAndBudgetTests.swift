@testable import DCServe
import DictionaryCodec
import DictionaryTransport
import Foundation
import Logging
import Testing
import TestSupport
import Locking

/// History rules under load: more active groups than `maxGroups` are reported (a warning at most
/// once a minute per rule) instead of windows silently never building, and a first dictionary's
/// durable store write is not charged to the build budget.
@Suite struct HistoryCapacityAndBudgetTests {
    /// Log lines at warning level or above, as text.
    final class Warnings: Sendable {
        let lines = Locked<[String]>([])
        var count: Int { lines.withLock { $0.count } }
    }

    struct WarningHandler: LogHandler {
        let sink: Warnings
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .warning
        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }
        func log(event: LogEvent) {
            let text = "\(event.message) " + (event.metadata ?? [:]).sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
                .joined(separator: " ")
            sink.lines.withLock { $0.append(text) }
        }
    }

    /// A clock the test moves.
    final class TestClock: Sendable {
        private let date = Locked(Date(timeIntervalSince1970: 1_800_000_000))
        var now: Date { date.withLock { $0 } }
        func advance(_ seconds: TimeInterval) { date.withLock { $0 = $0.addingTimeInterval(seconds) } }
    }

    func temporaryStore() throws -> (DirectoryDictionaryStore, String) {
        let dir = uniqueTemporaryURL("history").path
        return (try DirectoryDictionaryStore(directory: dir, retention: DictionaryRetention()), dir)
    }

    @Test func moreActiveGroupsThanMaxGroupsAreReportedOnceAMinute() throws {
        let (store, dir) = try temporaryStore()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let warnings = Warnings()
        let clock = TestClock()
        let rules = try HistoryDictionaryTests.historyRule { $0.maxGroups = 3; $0.firstBuildBytes = 1 << 20 }
        let logger = Logger(label: "test") { _ in WarningHandler(sink: warnings) }
        let made = HistoryDictionaries(rules: rules, store: store, library: DictionaryLibrary(store: store), partitionSecret: [],
                                       logger: logger, clock: { clock.now })
        let history = try #require(made)
        let builder = try #require(history.builders["chats"])
        func advance(_ seconds: TimeInterval) { clock.advance(seconds) }
        // Three groups fit: nothing to say.
        for g in 0..<3 { builder.collect(HistoryDictionaryTests.body(g), groupValue: Substring("\(g)"), partition: "p") }
        #expect(warnings.count == 0)
        // Ten groups active within a second: seven active windows dropped, one warning naming the setting.
        for g in 3..<10 {
            advance(0.1)
            builder.collect(HistoryDictionaryTests.body(g), groupValue: Substring("\(g)"), partition: "p")
        }
        #expect(builder.groupCount == 3)
        #expect(warnings.count == 1)
        let line = try #require(warnings.lines.withLock { $0.first })
        #expect(line.contains("history.maxGroups (3)") && line.contains("dictionaries.chats.history.maxGroups"), "\(line)")
        // Groups idle for over a minute are dropped quietly: that is what the cap is for.
        advance(120)
        for g in 10..<13 { builder.collect(HistoryDictionaryTests.body(g), groupValue: Substring("\(g)"), partition: "p") }
        #expect(warnings.count == 1)
        // Still over capacity a minute after the first warning: one more line, counting what it saw since.
        for g in 13..<20 {
            advance(1)
            builder.collect(HistoryDictionaryTests.body(g), groupValue: Substring("\(g)"), partition: "p")
        }
        #expect(warnings.count == 2)
        #expect(warnings.lines.withLock { $0.last }?.contains("droppedActiveWindows=") == true)
        builder.waitForBuilds()
    }

    /// A first dictionary is published at once and written in the background; a slow write (held
    /// here far beyond the budget) must not use up the rule's build time, or the next group's first
    /// dictionary would be skipped for the rest of the minute.
    @Test func firstDictionaryStoreWriteIsNotChargedToTheBudget() throws {
        let (base, dir) = try temporaryStore()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let store = GatedDictionaryStore(base)
        defer { store.open() }
        let rules = try HistoryDictionaryTests.historyRule { $0.buildMillisecondsPerMinute = 100 }
        let history = try HistoryDictionaryTests.history(rules, store: store)
        let builder = try #require(history.builders["chats"])
        let body = HistoryDictionaryTests.body
        builder.collect(body(1), groupValue: "1", partition: "p")
        #expect(builder.collect(body(2), groupValue: "1", partition: "p") != nil, "group 1's first dictionary")
        #expect(store.awaitWaitingPuts(1))
        usleep(400_000)  // the store write takes 400 ms, four times the minute's budget
        store.open()
        builder.waitForBuilds()
        builder.collect(body(3), groupValue: "2", partition: "p")
        #expect(builder.collect(body(4), groupValue: "2", partition: "p") != nil,
                "group 2's first dictionary is built: the write was not build time")
        builder.waitForBuilds()
    }
}

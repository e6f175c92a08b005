@testable import DictionaryStorePostgres
import DictionaryCodec
import DictionaryTransport
import Foundation
import NIOCore
import PostgresNIO
import Testing

/// History windows shared through PostgreSQL: bodies of one conversation appended by two instances
/// land in one window (distinct, trimmed to its capacity, counted as new once), one build lease per
/// group, finishing a build consumes the counted bytes, partitions never mix, and the rule's limits
/// drop idle and surplus windows; and a dictionary stored while an instance was not listening is
/// announced to it once it reconnects (its history index learns it). Against the real throwaway PostgreSQL.
@Suite(.serialized, .enabled(if: TestPostgres.url != nil, TestPostgres.skipReason))
struct PostgresHistoryWindowTests {
    let alice = String(repeating: "a1", count: 32)  // partition ids: 64 hex digits (HMACs)
    let bob = String(repeating: "b2", count: 32)

    func open(_ settings: PostgresStoreSettings) async throws -> PostgresDictionaryStore {
        try await onThread { try PostgresDictionaryStore(settings: settings) }
    }

    func body(_ text: String, _ size: Int) -> [UInt8] {
        Array(text.utf8) + [UInt8](repeating: UInt8(ascii: "."), count: size - text.utf8.count)
    }

    @Test func twoInstancesFillOneWindowAndOneBuildsAtATime() async throws {
        let settings = try await TestPostgres.freshDatabase()
        let a = try await open(settings)
        let b = try await open(settings)
        defer { a.shutdown(); b.shutdown() }
        let chat = HistoryGroupID(rule: "chats", group: "7", partition: alice)
        let (m1, m2, m3) = (body("m1 via a", 100), body("m2 via b", 200), body("m3 via a", 300))
        let afterA = try await onThread { try a.appendHistory([.init(group: chat, bytes: m1)], capacity: 450) }
        #expect(afterA[chat] == HistoryGroupState(newBytes: 100, totalBytes: 100, lastBuild: nil, building: false))
        let afterB = try await onThread { try b.appendHistory([.init(group: chat, bytes: m2)], capacity: 450) }
        #expect(afterB[chat]?.newBytes == 300 && afterB[chat]?.totalBytes == 300)
        // A body already in the window is not new; it becomes the newest.
        let again = try await onThread { try a.appendHistory([.init(group: chat, bytes: m1)], capacity: 450) }
        #expect(again[chat]?.newBytes == 300)
        // Over the capacity: the oldest (m2 now) goes.
        let trimmed = try await onThread { try a.appendHistory([.init(group: chat, bytes: m3)], capacity: 450) }
        #expect(trimmed[chat]?.newBytes == 600 && trimmed[chat]?.totalBytes == 400)

        // One lease: B's claim gets the window both appended to, A's claim meanwhile gets nothing.
        let claim = try #require(try await onThread { try b.claimHistoryBuild(chat, lease: 30) })
        #expect(claim.bodies == [m1, m3] && claim.state.newBytes == 600)
        #expect(try await onThread { try a.claimHistoryBuild(chat, lease: 30) } == nil)
        let during = try await onThread { try a.appendHistory([.init(group: chat, bytes: body("m4 via a", 50))], capacity: 450) }
        #expect(during[chat]?.building == true && during[chat]?.newBytes == 650)
        // The build consumes what it counted; what came meanwhile stays new.
        let built = Date(timeIntervalSince1970: 1_800_000_000)
        try await onThread { try b.finishHistoryBuild(claim, builtAt: built) }
        let next = try #require(try await onThread { try a.claimHistoryBuild(chat, lease: 30) })
        #expect(next.state.newBytes == 50 && next.state.lastBuild == built && next.bodies.count == 3)
        // A late finish of the first (lapsed) lease never releases the second one.
        try await onThread { try b.finishHistoryBuild(claim, builtAt: nil) }
        #expect(try await onThread { try b.claimHistoryBuild(chat, lease: 30) } == nil)
        try await onThread { try a.finishHistoryBuild(next, builtAt: nil) }  // failed build: counters kept
        let kept = try #require(try await onThread { try b.claimHistoryBuild(chat, lease: 30) })
        #expect(kept.state.newBytes == 50 && kept.state.lastBuild == built)
    }

    @Test func partitionsNeverShareAWindowAndOnlyPartitionIdsAreStored() async throws {
        let settings = try await TestPostgres.freshDatabase()
        let a = try await open(settings)
        defer { a.shutdown() }
        let (alice, bob) = (alice, bob)
        let aliceChat = HistoryGroupID(rule: "chats", group: "7", partition: alice)
        let bobChat = HistoryGroupID(rule: "chats", group: "7", partition: bob)
        let states = try await onThread {
            try a.appendHistory([.init(group: aliceChat, bytes: body("alice reads", 120)),
                                 .init(group: bobChat, bytes: body("bob reads", 80))], capacity: 1000)
        }
        #expect(states[aliceChat]?.newBytes == 120 && states[bobChat]?.newBytes == 80)
        let claim = try #require(try await onThread { try a.claimHistoryBuild(bobChat, lease: 30) })
        #expect(claim.bodies == [body("bob reads", 80)])
        // A credential in place of a partition id is refused by the table itself.
        let token = HistoryGroupID(rule: "chats", group: "7", partition: "Bearer alice")
        await #expect(throws: DictionaryStoreError.self) {
            try await onThread { try a.appendHistory([.init(group: token, bytes: [1, 2, 3])], capacity: 1000) }
        }
        // A shared rule's windows have the empty partition.
        let shared = HistoryGroupID(rule: "news", group: "front", partition: "")
        #expect(try await onThread { try a.appendHistory([.init(group: shared, bytes: [1, 2, 3])], capacity: 10) }[shared]?.newBytes == 3)
    }

    @Test func idleAndSurplusWindowsAreDropped() async throws {
        let settings = try await TestPostgres.freshDatabase()
        let a = try await open(settings)
        defer { a.shutdown() }
        let alice = alice
        let groups = (1...3).map { HistoryGroupID(rule: "chats", group: "\($0)", partition: alice) }
        for g in groups { _ = try await onThread { try a.appendHistory([.init(group: g, bytes: Array("chat \(g.group)".utf8))], capacity: 100) } }
        let other = HistoryGroupID(rule: "news", group: "front", partition: "")
        _ = try await onThread { try a.appendHistory([.init(group: other, bytes: [1])], capacity: 100) }
        // Room for two chats: the least recently added goes; another rule's windows are not counted.
        let dropped = try await onThread { try a.pruneHistory(rule: "chats", maxGroups: 2, idleBefore: .distantPast) }
        #expect(dropped.count == 1)
        #expect(try await onThread { try a.claimHistoryBuild(groups[0], lease: 30) } == nil)
        #expect(try await TestPostgres.scalar(settings, "SELECT string_agg(grp, ',' ORDER BY grp) FROM dcserve_history_groups WHERE rule = 'chats'") == "2,3")
        #expect(try await TestPostgres.scalar(settings, "SELECT count(*)::text FROM dcserve_history_entries WHERE rule = 'chats'") == "2")
        // Idle since before now: every chat window goes, the news one stays.
        let idle = try await onThread { try a.pruneHistory(rule: "chats", maxGroups: 10, idleBefore: Date().addingTimeInterval(60)) }
        #expect(idle.count == 2)
        #expect(try await TestPostgres.scalar(settings, "SELECT count(*)::text FROM dcserve_history_groups") == "1")
    }

    @Test func rowsStoredWhileNotListeningAreAnnouncedAfterReconnecting() async throws {
        let settings = try await TestPostgres.freshDatabase()
        let b = try await open(settings)
        defer { b.shutdown() }
        let learnt = RemovalLog()
        b.observe { change in if case .stored(let hash, let partition) = change { learnt.append(hash, partition) } }
        // A row no notification announced (as if stored while b's listening connection was down)...
        let bytes = Array("alice's chat window".utf8), hash = SHA256.hash(Array("alice's chat window".utf8)), alice = alice
        try await TestPostgres.withConnection(settings) { c in
            try await c.query("""
                INSERT INTO dcserve_dictionaries (partition, hash, bytes, byte_size, match, path_pattern, rule, first_served, last_served)
                VALUES (\(alice), \(hash.hex), \(ByteBuffer(bytes: bytes)), \(bytes.count), '/api/chats/7/*', '/api/chats/7/*', 'chats', now(), now())
                """, logger: TestPostgres.logger)
            // ...then b's connections drop: it reconnects, reloads, and announces the row.
            try await c.query("""
                SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()
                """, logger: TestPostgres.logger)
        }
        #expect(await eventually { learnt.entries.contains { $0.0 == hash && $0.1 == alice } })
        #expect(b.metadata(hash, partition: alice)?.rule == "chats")
    }
}

import DictionaryCodec
import DictionaryTransport
import Foundation
import Logging
import NIOCore
import PostgresNIO

/// History windows in PostgreSQL (``PostgresDictionarySchema`` version 3), shared by every instance
/// of the store: whichever instance serves a conversation's responses, they land in one window, and
/// one build lease per group makes one instance build its next dictionary. The dictionaries built
/// are ordinary rows of `dcserve_dictionaries`, so every instance learns them by notification.
///
/// Each call is one transaction on a pooled connection and blocks the calling thread (never longer
/// than the connect timeout); while the store is disconnected they throw at once.
extension PostgresDictionaryStore: HistoryWindowStore {
    public var historyWindows: (any HistoryWindowStore)? { self }

    public func appendHistory(_ bodies: [HistoryWindowBody], capacity: Int) throws -> [HistoryGroupID: HistoryGroupState] {
        guard !bodies.isEmpty else { return [:] }
        var order: [HistoryGroupID] = []
        var byGroup: [HistoryGroupID: [(hex: String, bytes: [UInt8])]] = [:]
        for body in bodies {
            if byGroup[body.group] == nil { order.append(body.group) }
            byGroup[body.group, default: []].append((SHA256.hash(body.bytes).hex, body.bytes))
        }
        // Groups in one order on every instance: two batches locking the same group rows never deadlock.
        order.sort { ($0.rule, $0.group, $0.partition) < ($1.rule, $1.group, $1.partition) }
        let capacity = max(1, capacity), groups = order, entries = byGroup
        return try historyTransaction("history window append") { connection, logger in
            var states: [HistoryGroupID: HistoryGroupState] = [:]
            for g in groups {
                // The group row first: it exists before its entries (foreign key) and is locked for
                // the rest of the transaction (instances appending to one group take turns).
                try await connection.query("""
                    INSERT INTO dcserve_history_groups (rule, grp, partition) VALUES (\(g.rule), \(g.group), \(g.partition))
                    ON CONFLICT (rule, grp, partition) DO UPDATE SET updated = now()
                    """, logger: logger)
                var added = 0
                for entry in entries[g]! {
                    let size = entry.bytes.count
                    let rows = try await connection.query("""
                        INSERT INTO dcserve_history_entries (rule, grp, partition, body_hash, body, byte_size, seq)
                        VALUES (\(g.rule), \(g.group), \(g.partition), \(entry.hex), \(ByteBuffer(bytes: entry.bytes)), \(size),
                            nextval('dcserve_history_seq'))
                        ON CONFLICT (rule, grp, partition, body_hash) DO UPDATE SET seq = EXCLUDED.seq
                        RETURNING (xmax = 0)
                        """, logger: logger)
                    for try await inserted in rows.decode(Bool.self) where inserted { added += size }
                }
                // Trim to the capacity, oldest first; the newest body always stays.
                try await connection.query("""
                    DELETE FROM dcserve_history_entries AS e USING (
                        SELECT body_hash, sum(byte_size) OVER (ORDER BY seq DESC) AS running, row_number() OVER (ORDER BY seq DESC) AS n
                        FROM dcserve_history_entries WHERE rule = \(g.rule) AND grp = \(g.group) AND partition = \(g.partition)
                    ) AS r
                    WHERE e.rule = \(g.rule) AND e.grp = \(g.group) AND e.partition = \(g.partition) AND e.body_hash = r.body_hash
                        AND r.running > \(capacity) AND r.n > 1
                    """, logger: logger)
                let rows = try await connection.query("""
                    UPDATE dcserve_history_groups SET new_bytes = new_bytes + \(added), updated = now(),
                        total_bytes = (SELECT COALESCE(sum(byte_size), 0) FROM dcserve_history_entries
                                       WHERE rule = \(g.rule) AND grp = \(g.group) AND partition = \(g.partition))
                    WHERE rule = \(g.rule) AND grp = \(g.group) AND partition = \(g.partition)
                    RETURNING new_bytes, total_bytes, last_build, COALESCE(lease_until > now(), false)
                    """, logger: logger)
                for try await (newBytes, total, lastBuild, building) in rows.decode((Int, Int, Date?, Bool).self) {
                    states[g] = HistoryGroupState(newBytes: newBytes, totalBytes: total, lastBuild: lastBuild, building: building)
                }
            }
            return states
        }
    }

    public func claimHistoryBuild(_ group: HistoryGroupID, lease: TimeInterval) throws -> HistoryBuildClaim? {
        // Random: a late `finish` of a lapsed lease never releases the lease that replaced it.
        let token = UUID().uuidString.lowercased()
        let g = group
        return try historyTransaction("history build claim") { connection, logger in
            var state: HistoryGroupState?
            let rows = try await connection.query("""
                UPDATE dcserve_history_groups SET lease_token = \(token), lease_until = now() + make_interval(secs => \(lease))
                WHERE rule = \(g.rule) AND grp = \(g.group) AND partition = \(g.partition)
                    AND (lease_until IS NULL OR lease_until <= now())
                RETURNING new_bytes, total_bytes, last_build
                """, logger: logger)
            for try await (newBytes, total, lastBuild) in rows.decode((Int, Int, Date?).self) {
                state = HistoryGroupState(newBytes: newBytes, totalBytes: total, lastBuild: lastBuild, building: false)
            }
            guard let state else { return nil }
            var bodies: [[UInt8]] = []
            let entries = try await connection.query("""
                SELECT body FROM dcserve_history_entries
                WHERE rule = \(g.rule) AND grp = \(g.group) AND partition = \(g.partition) ORDER BY seq
                """, logger: logger)
            for try await var buffer in entries.decode(ByteBuffer.self) {
                bodies.append(buffer.readBytes(length: buffer.readableBytes) ?? [])
            }
            return HistoryBuildClaim(group: group, state: state, bodies: bodies, token: token)
        }
    }

    public func finishHistoryBuild(_ claim: HistoryBuildClaim, builtAt: Date?) throws {
        let g = claim.group, consumed = builtAt == nil ? 0 : claim.state.newBytes
        try historyTransaction("history build finish") { connection, logger in
            try await connection.query("""
                UPDATE dcserve_history_groups SET new_bytes = GREATEST(0, new_bytes - \(consumed)),
                    last_build = COALESCE(\(builtAt), last_build), lease_token = NULL, lease_until = NULL
                WHERE rule = \(g.rule) AND grp = \(g.group) AND partition = \(g.partition) AND lease_token = \(claim.token)
                """, logger: logger)
        }
    }

    public func pruneHistory(rule: String, maxGroups: Int, idleBefore: Date) throws -> [Date] {
        try historyTransaction("history window retention") { connection, logger in
            var dropped: [Date] = []
            let rows = try await connection.query("""
                WITH ranked AS (
                    SELECT grp, partition, updated, row_number() OVER (ORDER BY updated DESC) AS n
                    FROM dcserve_history_groups WHERE rule = \(rule)
                )
                DELETE FROM dcserve_history_groups AS g USING ranked AS r
                WHERE g.rule = \(rule) AND g.grp = r.grp AND g.partition = r.partition
                    AND (r.updated < \(idleBefore) OR r.n > \(max(0, maxGroups)))
                RETURNING g.updated
                """, logger: logger)
            for try await updated in rows.decode(Date.self) { dropped.append(updated) }
            return dropped
        }
    }

    /// Runs `body` in one transaction on a pooled connection, blocking; errors become
    /// ``DictionaryStoreError``s naming `what`.
    @discardableResult
    private func historyTransaction<T: Sendable>(
        _ what: String, _ body: @escaping @Sendable (PostgresConnection, Logger) async throws -> T) throws -> T {
        guard status.connected else {
            throw DictionaryStoreError("PostgreSQL dictionary store is unreachable (\(status.lastError ?? "disconnected")): \(what) skipped")
        }
        let client = self.client, logger = Logger(label: "dcserve.dictionary-store.postgres")
        do {
            return try blockingAwait(timeout: settings.connectTimeoutSeconds, what: what) {
                try await client.withTransaction(logger: logger) { connection in try await body(connection, logger) }
            }
        } catch {
            throw DictionaryStoreError("\(what) in PostgreSQL failed: \(Self.describe(error))")
        }
    }
}

import Foundation

/// History windows kept in a store that several dcserve instances share: per conversation (history
/// rule, group, partition) the recent distinct response bodies a dictionary is built from, how much
/// new content arrived since its last build, and a build lease so one instance builds at a time.
///
/// A store that serves one process only answers `nil` for ``DictionaryStore/historyWindows`` and the
/// history builder keeps its windows in memory. Rows are found by (rule, group, partition) only,
/// never across partitions. Thread-safe; the methods block on the store (call them from a
/// background queue, never from an event loop).
public protocol HistoryWindowStore: Sendable {
    /// Adds `bodies` (oldest first) to their groups' windows: a body already in its window only
    /// becomes the newest again (no new bytes); each window is then trimmed to `capacity` bytes,
    /// oldest first (the newest body always stays). Returns every touched group's state after the
    /// additions. All or nothing.
    func appendHistory(_ bodies: [HistoryWindowBody], capacity: Int) throws -> [HistoryGroupID: HistoryGroupState]

    /// Takes `group`'s build lease for `lease` seconds when no live lease is held, and returns the
    /// window's bodies (oldest first) with the group's state; nil when another build holds the lease
    /// (or the group has no window).
    func claimHistoryBuild(_ group: HistoryGroupID, lease: TimeInterval) throws -> HistoryBuildClaim?

    /// Ends a claimed build and releases its lease. `builtAt` non-nil: a dictionary dated `builtAt`
    /// was stored from the claimed window, so the content counted at the claim is no longer new.
    func finishHistoryBuild(_ claim: HistoryBuildClaim, builtAt: Date?) throws

    /// Drops the windows of `rule` not added to since `idleBefore`, then the least recently added
    /// ones beyond `maxGroups`. Returns when each dropped window last got content.
    func pruneHistory(rule: String, maxGroups: Int, idleBefore: Date) throws -> [Date]
}

/// One conversation of one partition under one history rule. `partition` is a partition id, or ""
/// for a rule without partitions.
public struct HistoryGroupID: Hashable, Sendable {
    public var rule: String
    public var group: String
    public var partition: String

    public init(rule: String, group: String, partition: String) {
        self.rule = rule
        self.group = group
        self.partition = partition
    }
}

/// One response body for a group's window.
public struct HistoryWindowBody: Sendable {
    public var group: HistoryGroupID
    public var bytes: [UInt8]

    public init(group: HistoryGroupID, bytes: [UInt8]) {
        self.group = group
        self.bytes = bytes
    }
}

/// A shared window's counters, as every instance contributed to them.
public struct HistoryGroupState: Sendable, Equatable {
    /// Bytes of distinct content added since the group's last build.
    public var newBytes: Int
    /// Bytes the window holds.
    public var totalBytes: Int
    /// The date of the group's last built dictionary, by any instance.
    public var lastBuild: Date?
    /// Whether a build holds the lease now.
    public var building: Bool

    public init(newBytes: Int, totalBytes: Int, lastBuild: Date?, building: Bool) {
        self.newBytes = newBytes
        self.totalBytes = totalBytes
        self.lastBuild = lastBuild
        self.building = building
    }
}

/// A build lease on one group and the window it is built from.
public struct HistoryBuildClaim: Sendable {
    public var group: HistoryGroupID
    /// The group's state when the lease was taken (`building` false).
    public var state: HistoryGroupState
    /// The window's bodies, oldest first.
    public var bodies: [[UInt8]]
    /// Identifies this lease (a later lease on the same group is another token).
    public var token: String

    public init(group: HistoryGroupID, state: HistoryGroupState, bodies: [[UInt8]], token: String) {
        self.group = group
        self.state = state
        self.bodies = bodies
        self.token = token
    }
}

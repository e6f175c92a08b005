/// Limits of a ``ClientDictionaryStore``.
///
/// - `maxCount`: dictionaries kept in all partitions together (Chromium: 1000).
/// - `byteBudget`: bytes kept in all partitions together.
/// - `partitionShare`: the fraction of `byteBudget` one partition may hold, so one account cannot
///   push every other account's dictionaries out.
/// Over a limit, the least recently used dictionaries go first: within the partition for its share,
/// store-wide for the count and the budget.
public struct ClientStoreLimits: Sendable, Hashable {
    public var maxCount: Int
    public var byteBudget: Int
    public var partitionShare: Double

    public init(maxCount: Int = 1000, byteBudget: Int = 512 << 20, partitionShare: Double = 0.5) {
        self.maxCount = max(1, maxCount)
        self.byteBudget = max(1, byteBudget)
        self.partitionShare = min(1, max(0.001, partitionShare))
    }

    /// Bytes one partition may hold.
    public var partitionBytes: Int { Int(Double(byteBudget) * partitionShare) }
}

/// How `server.memoryBytes` is divided among the parts of dcserve that hold memory: fixed shares of
/// one total, each enforced by its own cache (no cross-cache accountant: every cache keeps its own
/// lock and its own eviction order, and a share never depends on another cache's traffic).
///
/// Shares of the total (the rest, `unmanaged`, is headroom for what no cache bounds: connection
/// buffers, bodies being relayed or buffered, the runtime and the allocator's fragmentation):
///
/// | consumer | share | enforced by |
/// |---|---|---|
/// | `dictionaries` | 25% | `DictionaryLibrary` (dictionaries with their prepared encoder forms) |
/// | `variants` | 15% | `VariantCache` (encoded bodies) |
/// | `responseMemo` | 5% | `ResponseMemo` (finished content-addressed responses) |
/// | `staticBodies` | 10% | `ResourceCache` (static bodies read for encoding) |
/// | `storeCache` | 5% | the store's page caches (SQLite: split over its connections) |
/// | `liveIndex` | 15% | `LiveVersionIndex` (caps on its versions and tombstones: ``liveIndexEntryBytes`` and ``liveIndexTombstoneBytes`` each) |
/// | `unmanaged` | 25% | nothing: headroom |
///
/// `compression.dictionaryMemoryBytes` and `compression.variantCacheBytes`, when set, override their
/// consumer's share (and, for the variant cache, the memo's and the static bodies', which then follow
/// it as before: a quarter and a half of it). History windows are bounded by their own settings
/// (`maxGroups` × `windowBytes` per rule) and only shown beside the budget.
public struct MemoryBudget: Sendable, Equatable {
    /// A part of dcserve that draws from the budget (the `consumer` label on `/metrics`).
    public enum Consumer: String, CaseIterable, Sendable {
        case dictionaries, variants, responseMemo, staticBodies, storeCache, liveIndex, unmanaged
    }

    /// Default `server.memoryBytes`: a small container's memory (a 512 MiB pod, or a unit with
    /// `MemoryMax=640M` leaving room for the unmanaged part to exceed its share).
    public static let defaultTotal = 512 << 20

    /// Each consumer's share of the total, in percent.
    static let percent: [Consumer: Int] = [
        .dictionaries: 25, .variants: 15, .responseMemo: 5, .staticBodies: 10, .storeCache: 5, .liveIndex: 15, .unmanaged: 25,
    ]

    /// Memory one retained live version costs the live index (its keys, slot and list links; measured
    /// by bench/scale), for the index's entry cap.
    public static let liveIndexEntryBytes = 512
    /// Memory one remembered removal (tombstone) costs the live index (measured by heaptrack at idle
    /// after bench/memory: about 230 bytes each).
    public static let liveIndexTombstoneBytes = 256
    /// Tombstones the index keeps per retained version it may hold (a quarter: the share covers both).
    public static let liveIndexTombstonesPerEntry = 4

    /// The whole budget (`server.memoryBytes`).
    public let total: Int
    /// Bytes of each consumer (after overrides).
    public let bytes: [Consumer: Int]

    /// - Parameters:
    ///   - dictionaryOverride: `compression.dictionaryMemoryBytes` when set.
    ///   - variantOverride: `compression.variantCacheBytes` when set.
    public init(total: Int = MemoryBudget.defaultTotal, dictionaryOverride: Int? = nil, variantOverride: Int? = nil) {
        self.total = total
        var bytes: [Consumer: Int] = [:]
        for (consumer, percent) in Self.percent { bytes[consumer] = Int((Double(total) * Double(percent) / 100).rounded(.down)) }
        if let dictionaryOverride { bytes[.dictionaries] = dictionaryOverride }
        if let variantOverride {
            bytes[.variants] = variantOverride
            bytes[.responseMemo] = max(variantOverride / 4, 1 << 20)
            bytes[.staticBodies] = max(variantOverride / 2, 1 << 20)
        }
        self.bytes = bytes
    }

    public subscript(_ consumer: Consumer) -> Int { bytes[consumer] ?? 0 }

    /// Live versions the index may retain (its entry cap), at least 1,024: the share covers them and
    /// ``liveIndexTombstones`` remembered removals.
    public var liveIndexEntries: Int {
        max(1024, self[.liveIndex] / (Self.liveIndexEntryBytes + Self.liveIndexTombstoneBytes / Self.liveIndexTombstonesPerEntry))
    }

    /// Removals the live index remembers (to answer a client naming one without a store lookup).
    public var liveIndexTombstones: Int { liveIndexEntries / Self.liveIndexTombstonesPerEntry }

    /// SQLite's page cache per connection: the store share over the writer and `readers` readers.
    public func storePageCacheBytes(readers: Int) -> Int { max(256 << 10, self[.storeCache] / (readers + 1)) }
}

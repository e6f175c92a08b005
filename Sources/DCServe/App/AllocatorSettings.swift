import CLinux
import Foundation

/// glibc malloc settings for dcserve's allocation pattern, applied once per process by
/// ``apply()``: bodies of tens of KB allocated and freed per request, between long-lived small objects.
/// With glibc's defaults such bodies come from the arenas (the mmap threshold rises to 32 MiB as large
/// blocks are freed) and the arenas, fragmented by the small objects, grow with traffic: `malloc_trim`
/// under traffic did not bring them back. Blocks of at least ``mmapThreshold`` bytes get their own
/// mapping, returned when freed, at the cost of page faults on every such body (kernel time);
/// arenas are capped at the number of cores (at least 2). A setting the operator gives in
/// `GLIBC_TUNABLES` (`glibc.malloc.mmap_threshold`, `glibc.malloc.arena_max`) is left as given.
enum AllocatorSettings {
    /// Allocations of at least this many bytes are mapped on their own.
    static let mmapThreshold = 32 << 10

    private static let applied: Bool = {
        let tunables = ProcessInfo.processInfo.environment["GLIBC_TUNABLES"] ?? ""
        let threshold = tunables.contains("glibc.malloc.mmap_threshold") ? 0 : mmapThreshold
        let arenas = tunables.contains("glibc.malloc.arena_max") ? 0 : max(2, ProcessInfo.processInfo.activeProcessorCount)
        return dcserve_malloc_configure(Int32(threshold), Int32(arenas)) == 1
    }()

    /// Applies the settings (once; later calls do nothing). True when they are in effect.
    @discardableResult
    static func apply() -> Bool { applied }
}

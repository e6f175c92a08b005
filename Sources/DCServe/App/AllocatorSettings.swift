import CLinux
import Foundation

/// glibc malloc settings for dcserve's allocation pattern, applied once per process by
/// ``apply()``: bodies of tens of KB allocated and freed per request, between long-lived small objects.
/// The mapping threshold is fixed at ``mmapThreshold``: glibc's own rises to 32 MiB as large blocks are
/// freed, and then codec tables of megabytes stay in the arenas; below it, bodies come from the arenas
/// and are reused without page faults (a lower threshold maps and faults in every body: kernel time).
/// Arenas are capped at the number of cores (at least 2). An arena keeps up to ``trimThreshold`` free
/// bytes at its top instead of glibc's 128 KiB: at 128 KiB, freeing one relayed 100 KB body gave
/// the top pages back and the next body faulted them in again; dcserve trims itself
/// (`IdleMemoryRelease`: when idle, and when resident memory exceeds the budget). Resident memory
/// follows the budget as long as nothing long-lived holds slack capacity (encoders copy their output
/// out at its exact size). A setting the operator gives in `GLIBC_TUNABLES`
/// (`glibc.malloc.mmap_threshold`, `glibc.malloc.arena_max`, `glibc.malloc.trim_threshold`) is left as given.
enum AllocatorSettings {
    /// Allocations of at least this many bytes are mapped on their own.
    static let mmapThreshold = 1 << 20
    /// Free bytes at an arena's top that glibc keeps rather than returning them at once.
    static let trimThreshold = 32 << 20

    private static let applied: Bool = {
        let tunables = ProcessInfo.processInfo.environment["GLIBC_TUNABLES"] ?? ""
        let threshold = tunables.contains("glibc.malloc.mmap_threshold") ? 0 : mmapThreshold
        let arenas = tunables.contains("glibc.malloc.arena_max") ? 0 : max(2, ProcessInfo.processInfo.activeProcessorCount)
        let trim = tunables.contains("glibc.malloc.trim_threshold") ? 0 : trimThreshold
        return dcserve_malloc_configure(Int32(threshold), Int32(arenas), Int32(trim)) == 1
    }()

    /// Applies the settings (once; later calls do nothing). True when they are in effect.
    @discardableResult
    static func apply() -> Bool { applied }
}

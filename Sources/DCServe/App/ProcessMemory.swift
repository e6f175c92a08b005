import Foundation

/// The process's resident memory, from `/proc/self/statm` (Linux).
enum ProcessMemory {
    /// Resident bytes now; 0 when `/proc` cannot be read.
    static func residentBytes() -> Int {
        guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .ascii) else { return 0 }
        let fields = text.split(separator: " ")
        guard fields.count > 1, let pages = Int(fields[1]) else { return 0 }
        return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
    }
}

#if canImport(Glibc)
import Glibc
#endif
import CLinux

// Helpers shared by the event-loop tests.

/// A connected Unix socket pair whose first end (the one a test member registers) is non-blocking;
/// the caller closes both.
func memberSocketPair() -> [Int32] {
    var pair: [Int32] = [0, 0]
    precondition(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &pair) == 0, "socketpair failed: errno \(errno)")
    _ = fcntl(pair[0], F_SETFL, fcntl(pair[0], F_GETFL) | O_NONBLOCK)
    return pair
}

/// The calling thread's name.
func currentThreadName() -> String {
    var name = [CChar](repeating: 0, count: 32)
    dcserve_thread_name(&name)
    return String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
}

/// For a test member's `handleEvents`: on EPOLLIN, reads `descriptor` until it has nothing more;
/// true if anything was read.
func drainedInput(_ descriptor: Int32, _ mask: UInt32) -> Bool {
    guard mask & 0x001 != 0 else { return false }  // EPOLLIN
    var buffer = [UInt8](repeating: 0, count: 256)
    var got = 0
    while case let n = read(descriptor, &buffer, buffer.count), n > 0 { got += n }
    return got > 0
}

/// True when the Swift runtime has given `object` a side table (it does on the first weak
/// reference): on 64-bit platforms the inline reference-count word (after the isa pointer) then
/// has its UseSlowRC and SideTableMark bits (63 and 62) set and holds the table's address.
func hasSideTable(_ object: AnyObject) -> Bool {
    withExtendedLifetime(object) {
        let word = Unmanaged.passUnretained(object).toOpaque().load(fromByteOffset: 8, as: UInt64.self)
        return word >> 62 == 0b11
    }
}

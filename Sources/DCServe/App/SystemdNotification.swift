#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// The systemd service notification protocol (`sd_notify(3)`): one datagram per state change to the
/// unix socket named by `$NOTIFY_SOCKET` (a path, or an abstract name spelled with a leading `@`).
/// With `Type=notify`, systemd counts the service as started once `READY=1` arrives, and as stopping
/// at `STOPPING=1`. Without `$NOTIFY_SOCKET` (not started by systemd) nothing is sent.
///
/// Best effort: a send that fails is ignored (the unit's start timeout reports a missing READY=1).
/// Thread-safe (one socket per call).
enum SystemdNotification {
    /// Sends `state` (e.g. `READY=1`, `STOPPING=1`); returns whether a datagram went out.
    @discardableResult
    static func send(_ state: String, environment: [String: String] = ProcessInfo.processInfo.environment) -> Bool {
        #if canImport(Glibc)
        guard let path = environment["NOTIFY_SOCKET"], !path.isEmpty else { return false }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        var name = Array(path.utf8)
        if name.first == UInt8(ascii: "@") { name[0] = 0 }  // abstract namespace
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard name.count < capacity else { return false }
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: name) }
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + name.count)
        let message = Array(state.utf8)
        let sent = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { sockaddrPointer in
                message.withUnsafeBytes { sendto(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL), sockaddrPointer, length) }
            }
        }
        return sent == message.count
        #else
        return false
        #endif
    }
}

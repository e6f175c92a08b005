#if canImport(Glibc)
import Glibc
#endif

/// A child process for tests, started with `posix_spawn` (its standard output and error to
/// /dev/null) and reaped with `waitpid`, without Foundation's `Process`: on Linux its
/// `waitUntilExit()` was seen to miss a child's exit and wait forever (a CI rehearsal on
/// 2026-11-26 sat 21 minutes in it after openssl had exited, until a debugger's attach woke it).
/// A value; `wait()` must be called once (it reaps the child).
public struct ChildProcess: Sendable {
    public struct SpawnFailed: Error, CustomStringConvertible {
        public let path: String
        public let errno: Int32
        public var description: String { "cannot start \(path): errno \(errno)" }
    }

    public let pid: pid_t

    /// Starts `path` with `arguments` (argv[0] is `path`).
    public static func spawn(_ path: String, _ arguments: [String]) throws -> ChildProcess {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        let argv: [UnsafeMutablePointer<CChar>?] = ([path] + arguments).map { strdup($0) } + [nil]
        defer { for p in argv { free(p) } }
        var pid: pid_t = 0
        let rc = posix_spawn(&pid, path, &actions, nil, argv, environ)
        guard rc == 0 else { throw SpawnFailed(path: path, errno: rc) }
        return ChildProcess(pid: pid)
    }

    /// Runs `path` with `arguments` to its end; returns its exit status.
    public static func run(_ path: String, _ arguments: [String]) throws -> Int32 {
        try spawn(path, arguments).wait()
    }

    /// Sends `signal` to the child.
    public func kill(_ signal: Int32) { _ = Glibc.kill(pid, signal) }

    /// Waits for the child to end and reaps it: its exit status, or 128 + the signal that ended it.
    @discardableResult
    public func wait() -> Int32 {
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1 {
            guard errno == EINTR else { return -1 }
        }
        let signal = status & 0x7f
        return signal == 0 ? (status >> 8) & 0xff : 128 + signal
    }
}

import DictionaryCodec
import DictionaryTransport
import Foundation
import Logging
import TestSupport
import Locking

/// A fresh empty directory path under the system temporary directory (not created); the caller removes it.
func temporaryStorePath() -> String {
    uniqueTemporaryURL("dcserve-sqlite-store-tests").path
}

/// Collects log records so tests can check what the store reported.
final class CapturedLogs: Sendable {
    let records = Locked<[(Logger.Level, String)]>([])
    var logger: Logger {
        Logger(label: "test") { _ in CapturingHandler(sink: self) }
    }
    func contains(_ level: Logger.Level, _ text: String) -> Bool {
        records.withLock { $0.contains { $0.0 == level && $0.1.contains(text) } }
    }
}

struct CapturingHandler: LogHandler {
    let sink: CapturedLogs
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .trace
    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }
    func log(event: LogEvent) {
        let text = "\(event.message) " + (event.metadata ?? [:]).sorted { $0.key < $1.key }.map { "\($0.value)" }.joined(separator: " ")
        sink.records.withLock { $0.append((event.level, text)) }
    }
}

/// The permission bits of `path` (not following a symlink).
func mode(_ path: String) -> mode_t? {
    var st = stat()
    guard lstat(path, &st) == 0 else { return nil }
    return st.st_mode & 0o7777
}

import Foundation

/// The server secret keying partition ids (``PartitionID``): the configured one, else the one kept in
/// the store directory as `partition-secret` (32 random bytes, hex, mode 0600), generated on first use.
/// Loaded once at start-up.
enum PartitionSecret {
    static let fileName = "partition-secret"

    /// The secret's bytes; throws (naming the file) when the file cannot be read or written.
    static func load(configured: String?, storeDirectory: String) throws -> [UInt8] {
        if let configured { return Array(configured.utf8) }
        let path = (storeDirectory as NSString).appendingPathComponent(fileName)
        if let text = try? String(contentsOfFile: path, encoding: .utf8) {
            let hex = text.trimmingCharacters(in: .whitespacesAndNewlines)
            guard hex.count >= 32, decodeHex(hex) != nil else {
                throw ConfigurationError(key: "dictionaries.partitionSecret", "\(path) is not a hex secret; remove it to generate a new one")
            }
            return Array(hex.utf8)  // the hex text is the key, as when it was generated
        }
        var bytes = [UInt8](repeating: 0, count: 32)
        for i in bytes.indices { bytes[i] = UInt8.random(in: 0...255) }  // SystemRandomNumberGenerator: getrandom(2)
        let hex = bytes.map { String(format: "%02x", $0) }.joined()
        try? FileManager.default.createDirectory(atPath: storeDirectory, withIntermediateDirectories: true)
        let temp = path + ".tmp-\(UUID().uuidString)"
        let fd = open(temp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            throw ConfigurationError(key: "dictionaries.partitionSecret", "cannot create \(temp): errno \(errno)")
        }
        let line = Array((hex + "\n").utf8)
        let written = line.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        let synced = fsync(fd) == 0
        close(fd)
        guard written == line.count, synced, rename(temp, path) == 0 else {
            unlink(temp)
            throw ConfigurationError(key: "dictionaries.partitionSecret", "cannot write \(path): errno \(errno)")
        }
        return Array(hex.utf8)
    }

    private static func decodeHex(_ hex: String) -> [UInt8]? {
        var out: [UInt8] = []
        var chars = hex.makeIterator()
        while let a = chars.next() {
            guard let b = chars.next(), let hi = a.hexDigitValue, let lo = b.hexDigitValue else { return nil }
            out.append(UInt8(hi << 4 | lo))
        }
        return out
    }
}

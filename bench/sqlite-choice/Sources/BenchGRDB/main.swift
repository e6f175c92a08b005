import GRDB
import Foundation
let path = CommandLine.arguments[1]
let n = Int(CommandLine.arguments[2])!
let size = Int(CommandLine.arguments[3])!
let batch = 100
unlink(path); unlink(path + "-wal"); unlink(path + "-shm")
var config = Configuration()
config.prepareDatabase { db in try db.execute(sql: "PRAGMA synchronous=NORMAL") }
let pool = try DatabasePool(path: path, configuration: config)
try pool.write { db in
    try db.execute(sql: "CREATE TABLE blobs(hash BLOB PRIMARY KEY, bytes BLOB NOT NULL, refs INTEGER NOT NULL)")
    try db.execute(sql: "CREATE TABLE records(partition TEXT NOT NULL, hash BLOB NOT NULL, rule TEXT, source_path TEXT, last_served REAL, byte_size INTEGER, PRIMARY KEY(partition, hash)) WITHOUT ROWID")
}
var body = [UInt8](repeating: 0x61, count: size)
func hashOf(_ i: Int) -> Data { var h = [UInt8](repeating: 0, count: 32); withUnsafeBytes(of: i.littleEndian) { for (k, b) in $0.enumerated() { h[k] = b } }; return Data(h) }
var t0 = Date()
for start in stride(from: 0, to: n, by: batch) {
    try pool.write { db in
        let insBlob = try db.cachedStatement(sql: "INSERT INTO blobs(hash, bytes, refs) VALUES(?, ?, 1) ON CONFLICT(hash) DO UPDATE SET refs = refs + 1")
        let insRec = try db.cachedStatement(sql: "INSERT OR REPLACE INTO records VALUES(?, ?, 'live', '/feed', ?, ?)")
        for i in start..<min(n, start + batch) {
            let h = hashOf(i)
            body.withUnsafeMutableBytes { p in withUnsafeBytes(of: i) { for (k, b) in $0.enumerated() { p[k] = b } } }
            try insBlob.execute(arguments: [h, Data(body)])
            try insRec.execute(arguments: ["user\(i % 1000)", h, 1.0, size])
        }
    }
}
let put = Date().timeIntervalSince(t0)
t0 = Date()
var total = 0
try pool.read { db in
    let get = try db.cachedStatement(sql: "SELECT b.bytes FROM records r JOIN blobs b ON b.hash = r.hash WHERE r.partition = ? AND r.hash = ?")
    for j in 0..<n {
        let i = (j &* 7919) % n
        let d = try Data.fetchOne(get, arguments: ["user\(i % 1000)", hashOf(i)])!
        let bytes = [UInt8](d)
        total += bytes.count
    }
}
let getT = Date().timeIntervalSince(t0)
print("grdb n=\(n) size=\(size): put \(String(format: "%.1f", put / Double(n) * 1e6)) us/version, get \(String(format: "%.1f", getT / Double(n) * 1e6)) us/get (\(total))")

import CSQLiteShim
import Foundation
let path = CommandLine.arguments[1]
let n = Int(CommandLine.arguments[2])!
let size = Int(CommandLine.arguments[3])!
let batch = 100
unlink(path); unlink(path + "-wal"); unlink(path + "-shm")
var db: OpaquePointer?
precondition(sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nil) == SQLITE_OK)
func exec(_ s: String) { precondition(sqlite3_exec(db, s, nil, nil, nil) == SQLITE_OK, String(cString: sqlite3_errmsg(db))) }
exec("PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;")
exec("CREATE TABLE blobs(hash BLOB PRIMARY KEY, bytes BLOB NOT NULL, refs INTEGER NOT NULL)")
exec("CREATE TABLE records(partition TEXT NOT NULL, hash BLOB NOT NULL, rule TEXT, source_path TEXT, last_served REAL, byte_size INTEGER, PRIMARY KEY(partition, hash)) WITHOUT ROWID")
func prep(_ s: String) -> OpaquePointer { var st: OpaquePointer?; precondition(sqlite3_prepare_v3(db, s, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &st, nil) == SQLITE_OK); return st! }
let insBlob = prep("INSERT INTO blobs(hash, bytes, refs) VALUES(?1, ?2, 1) ON CONFLICT(hash) DO UPDATE SET refs = refs + 1")
let insRec = prep("INSERT OR REPLACE INTO records VALUES(?1, ?2, 'live', '/feed', ?3, ?4)")
let get = prep("SELECT b.bytes FROM records r JOIN blobs b ON b.hash = r.hash WHERE r.partition = ?1 AND r.hash = ?2")
var body = [UInt8](repeating: 0x61, count: size)
func hashOf(_ i: Int) -> [UInt8] { var h = [UInt8](repeating: 0, count: 32); withUnsafeBytes(of: i.littleEndian) { for (k, b) in $0.enumerated() { h[k] = b } }; return h }
let SQLITE_TRANSIENT = unsafeBitCast(-1, to: sqlite3_destructor_type.self)
var t0 = Date()
for start in stride(from: 0, to: n, by: batch) {
    exec("BEGIN")
    for i in start..<min(n, start + batch) {
        let h = hashOf(i)
        body.withUnsafeMutableBytes { p in withUnsafeBytes(of: i) { for (k, b) in $0.enumerated() { p[k] = b } } }
        sqlite3_bind_blob(insBlob, 1, h, 32, SQLITE_TRANSIENT)
        sqlite3_bind_blob(insBlob, 2, body, Int32(size), SQLITE_TRANSIENT)
        precondition(sqlite3_step(insBlob) == SQLITE_DONE); sqlite3_reset(insBlob)
        sqlite3_bind_text(insRec, 1, "user\(i % 1000)", -1, SQLITE_TRANSIENT)
        sqlite3_bind_blob(insRec, 2, h, 32, SQLITE_TRANSIENT)
        sqlite3_bind_double(insRec, 3, 1.0)
        sqlite3_bind_int64(insRec, 4, Int64(size))
        precondition(sqlite3_step(insRec) == SQLITE_DONE); sqlite3_reset(insRec)
    }
    exec("COMMIT")
}
let put = Date().timeIntervalSince(t0)
t0 = Date()
var total = 0
for j in 0..<n {
    let i = (j &* 7919) % n
    let h = hashOf(i)
    sqlite3_bind_text(get, 1, "user\(i % 1000)", -1, SQLITE_TRANSIENT)
    sqlite3_bind_blob(get, 2, h, 32, SQLITE_TRANSIENT)
    precondition(sqlite3_step(get) == SQLITE_ROW)
    let len = Int(sqlite3_column_bytes(get, 0))
    let p = sqlite3_column_blob(get, 0)!
    let bytes = [UInt8](UnsafeRawBufferPointer(start: p, count: len))
    total += bytes.count
    sqlite3_reset(get)
}
let getT = Date().timeIntervalSince(t0)
print("raw n=\(n) size=\(size): put \(String(format: "%.1f", put / Double(n) * 1e6)) us/version, get \(String(format: "%.1f", getT / Double(n) * 1e6)) us/get (\(total))")

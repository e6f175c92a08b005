import DictionaryCodec
import HTTPServer

/// The identity body of one response as the compression middleware sees it: always its SHA-256 and
/// length, its bytes when they are in memory (the resource cache's shared array, or a buffered body),
/// else the open file they can be read from again.
///
/// `bytes()` on a file-backed body reads the file and checks the result against `hash`, so nothing
/// derived from it (an encoded variant cached under `hash`, a stored dictionary) can describe other
/// bytes than the hash says, even if the file was rewritten in place meanwhile
/// (``IdentityBody/Changed``). Callers ask for the bytes only when they must (an encode the variant
/// cache cannot answer, a first store): an identity answer sends the file itself.
///
/// Value type; immutable; Sendable (the file is shared read-only, `pread` at explicit offsets).
struct IdentityBody: Sendable {
    let hash: DictionaryHash
    let count: Int
    private let held: [UInt8]?
    private let file: FileBody?

    /// The file's bytes no longer hash to `hash` (it changed after it was hashed).
    struct Changed: Error, CustomStringConvertible {
        var description: String { "the file changed after it was hashed" }
    }

    init(_ entry: ResourceCache.Entry, file: FileBody?) {
        hash = entry.hash
        count = entry.count
        held = entry.bytes
        self.file = entry.bytes == nil ? file : nil
    }

    /// Whether `bytes()` returns memory already held (no read).
    var isHeld: Bool { held != nil }

    /// The identity bytes: the held array (shared, not copied), or read from the file and verified.
    /// Throws a read error or ``Changed``.
    func bytes() throws -> [UInt8] {
        if let held { return held }
        guard let file else { throw Changed() }
        let bytes = try file.readAll()
        guard bytes.count == count, SHA256.hash(bytes) == hash else { throw Changed() }
        return bytes
    }
}

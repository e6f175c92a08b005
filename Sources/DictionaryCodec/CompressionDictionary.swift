import Locking

/// A compression dictionary: immutable bytes plus their SHA-256, with prepared (pre-indexed) forms for
/// the zstd and brotli encoders and the zstd decoder, built lazily and cached.
///
/// Ownership and lifetime: the initialiser copies the bytes once into a ``Storage`` at a stable
/// address, freed when the last reference to it goes. Every prepared form (`ZSTD_CDict`/`ZSTD_DDict`
/// by reference, `BrotliEncoderPreparedDictionary`, which is "lean") points into that storage and holds
/// a strong reference to the `Storage` (not to this object: this object caches its prepared forms, so
/// a reference back would be a cycle that never frees the dictionary), so the bytes outlive every
/// prepared form and every encoder/decoder using one.
///
/// Thread-safety: `Sendable`. The bytes are never mutated. Each prepared form has its own slot with
/// its own `Locked`; it is built at most once per (dictionary, coding, level) while that slot's lock is
/// held (concurrent callers for the same form wait instead of duplicating milliseconds of work;
/// callers for other forms — e.g. a request at level 3 while a background job prepares level 19 —
/// are not blocked), then shared:
/// `ZSTD_CDict`, `ZSTD_DDict` and `BrotliEncoderPreparedDictionary` are read-only after creation and
/// may be used by any number of encoders/decoders on any threads at once.
public final class CompressionDictionary: Sendable, Hashable, CustomStringConvertible {
    /// SHA-256 of the bytes: the dictionary's identity on the wire.
    public let hash: DictionaryHash
    /// Number of bytes.
    public let count: Int
    /// The bytes, kept alive by this object and by every prepared form.
    let owner: Storage
    // The owner's buffer; `nonisolated(unsafe)` because it is written only in init.
    nonisolated(unsafe) let storage: UnsafeMutableRawBufferPointer

    /// Owns the copied bytes; frees them when the dictionary and every prepared form are gone.
    final class Storage: @unchecked Sendable {
        let buffer: UnsafeMutableRawBufferPointer
        init(_ buffer: UnsafeMutableRawBufferPointer) { self.buffer = buffer }
        deinit { buffer.deallocate() }
    }
    private let cache = Locked(PreparedCache())

    private struct PreparedCache {
        var zstdCompression: [Int: PreparedSlot<PreparedZstdCompressionDictionary>] = [:]
        var zstdDecompression = PreparedSlot<PreparedZstdDecompressionDictionary>()
        var brotliCompression: [Int: PreparedSlot<PreparedBrotliDictionary>] = [:]
    }

    /// Whether dcz encodes reference the bytes as a one-frame prefix (`ZSTD_CCtx_refPrefix`) instead of
    /// building a `ZSTD_CDict` — for a dictionary used once or twice (a live version), where building
    /// the CDict costs more than it saves. A CDict built anyway (e.g. by ``prepare(for:level:)``) is used.
    public let prefersPrefix: Bool

    /// Copies `bytes` and hashes them.
    public convenience init<Bytes: Collection<UInt8>>(bytes: Bytes) {
        self.init(bytes: bytes, knownHash: nil, prefersPrefix: false)
    }

    /// Copies `bytes`; `knownHash` (when given) must be their SHA-256 as the caller just computed it
    /// from the same bytes (no second hash). See ``prefersPrefix``.
    package init<Bytes: Collection<UInt8>>(bytes: Bytes, knownHash: DictionaryHash?, prefersPrefix: Bool) {
        self.prefersPrefix = prefersPrefix
        let count = bytes.count
        // Allocate at least one byte so the base address is never nil.
        let storage = UnsafeMutableRawBufferPointer.allocate(byteCount: max(count, 1), alignment: 16)
        if count > 0 {
            // memcpy for contiguous inputs ([UInt8], slices, Data); element-wise only otherwise.
            let copied: Void? = bytes.withContiguousStorageIfAvailable { source in
                storage.baseAddress!.copyMemory(from: source.baseAddress!, byteCount: count)
            }
            if copied == nil { _ = storage.initializeMemory(as: UInt8.self, from: bytes) }
        }
        self.storage = storage
        owner = Storage(storage)
        self.count = count
        hash = knownHash ?? SHA256.hash(UnsafeRawBufferPointer(rebasing: storage[0..<count]))
    }

    /// The zstd compression form for `level` if it was built already (never builds it).
    func builtZstdCompression(level: Int) -> PreparedZstdCompressionDictionary? {
        cache.withLock { $0.zstdCompression[level] }?.built
    }

    /// Copies `bytes` after checking they hash to `expectedHash` (use when loading a stored dictionary).
    /// Returns nil when they do not.
    public convenience init?<Bytes: Collection<UInt8>>(bytes: Bytes, expectedHash: DictionaryHash) {
        self.init(bytes: bytes)
        guard hash == expectedHash else { return nil }
    }


    /// The dictionary bytes, valid only inside `body`.
    public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try body(UnsafeRawBufferPointer(rebasing: storage[0..<count]))
    }

    /// A copy of the bytes.
    public var bytes: [UInt8] { withUnsafeBytes { Array($0.bindMemory(to: UInt8.self)) } }

    var baseAddress: UnsafeRawPointer { UnsafeRawPointer(storage.baseAddress!) }

    /// The zstd compression form for `level` (a raw-content `ZSTD_CDict`), built on first use.
    func preparedForZstdCompression(level: Int) throws -> PreparedZstdCompressionDictionary {
        try slot(\.zstdCompression, level).get { try PreparedZstdCompressionDictionary(dictionary: self, level: level) }
    }

    /// The zstd decompression form (a raw-content `ZSTD_DDict`), built on first use.
    func preparedForZstdDecompression() throws -> PreparedZstdDecompressionDictionary {
        let slot = cache.withLock { $0.zstdDecompression }
        return try slot.get { try PreparedZstdDecompressionDictionary(dictionary: self) }
    }

    /// The brotli encoder form for `quality` (RAW `BrotliEncoderPreparedDictionary`), built on first use.
    func preparedForBrotli(quality: Int) throws -> PreparedBrotliDictionary {
        try slot(\.brotliCompression, quality).get { try PreparedBrotliDictionary(dictionary: self, quality: quality) }
    }

    /// The slot for one level of one kind of prepared form, created on first use (short lock).
    private func slot<P>(_ kind: WritableKeyPath<PreparedCache, [Int: PreparedSlot<P>]>, _ level: Int) -> PreparedSlot<P> {
        cache.withLock { cache in
            if let slot = cache[keyPath: kind][level] { return slot }
            let slot = PreparedSlot<P>()
            cache[keyPath: kind][level] = slot
            return slot
        }
    }

    /// Builds the prepared forms for `coding` at `level` now (e.g. when a dictionary is loaded), so the
    /// first request does not pay for them. No-op for codings without a dictionary.
    public func prepare(for coding: ContentCoding, level: Int) throws {
        switch coding {
        case .dcz:
            _ = try preparedForZstdCompression(level: coding.effectiveLevel(level))
            _ = try preparedForZstdDecompression()
        case .dcb:
            _ = try preparedForBrotli(quality: coding.effectiveLevel(level))
        default:
            break
        }
    }

    /// Bytes held by the prepared forms built so far (zstd CDicts/DDict, brotli prepared
    /// dictionaries; each can be many times `count`), not counting the bytes themselves.
    /// A form still being built counts 0 (never waits for a build).
    public var preparedByteCount: Int {
        let c = cache.withLock { $0 }
        return c.zstdCompression.values.reduce(0) { $0 + ($1.built?.byteSize ?? 0) }
            + (c.zstdDecompression.built?.byteSize ?? 0)
            + c.brotliCompression.values.reduce(0) { $0 + ($1.built?.byteSize ?? 0) }
    }

    /// The memory this dictionary holds now: its bytes plus its prepared forms.
    public var memoryFootprint: Int { count + preparedByteCount }

    /// Drops every cached prepared form (encoders/decoders already using one keep it alive).
    public func discardPreparedForms() {
        cache.withLock { $0 = PreparedCache() }
    }

    public static func == (a: CompressionDictionary, b: CompressionDictionary) -> Bool {
        a === b || (a.hash == b.hash && a.count == b.count)
    }

    public func hash(into hasher: inout Hasher) { hasher.combine(hash) }

    public var description: String { "CompressionDictionary(\(hash.hex), \(count) bytes)" }
}

/// One lazily built prepared form: built once under its own lock, then returned to every caller.
/// A failed build is not cached (the next caller tries again).
final class PreparedSlot<Prepared: Sendable>: Sendable {
    private let value = Locked<Prepared?>(nil)

    /// The form if it was built; nil while it is being built (never waits) or before.
    var built: Prepared? { value.withLockIfAvailable { $0 } ?? nil }

    func get(_ build: () throws -> Prepared) throws -> Prepared {
        try value.withLock { value in
            if let value { return value }
            let built = try build()
            value = built
            return built
        }
    }
}

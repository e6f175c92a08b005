import Synchronization

/// A compression dictionary: immutable bytes plus their SHA-256, with prepared (pre-indexed) forms for
/// the zstd and brotli encoders and the zstd decoder, built lazily and cached.
///
/// Ownership and lifetime: the initialiser copies the bytes once into storage this object owns, at a
/// stable address, freed in `deinit`. Every prepared form (`ZSTD_CDict`/`ZSTD_DDict` by reference,
/// `BrotliEncoderPreparedDictionary`, which is "lean") points into that storage, and each prepared
/// form holds a strong reference to this object, so the bytes outlive every prepared form and every
/// encoder/decoder using one.
///
/// Thread-safety: `Sendable`. The bytes are never mutated. The prepared-form cache is guarded by a
/// `Mutex`; a prepared form is built at most once per (dictionary, coding, level) while the lock is
/// held (concurrent callers wait for it instead of duplicating milliseconds of work), then shared:
/// `ZSTD_CDict`, `ZSTD_DDict` and `BrotliEncoderPreparedDictionary` are read-only after creation and
/// may be used by any number of encoders/decoders on any threads at once.
public final class CompressionDictionary: Sendable, Hashable, CustomStringConvertible {
    /// SHA-256 of the bytes: the dictionary's identity on the wire.
    public let hash: DictionaryHash
    /// Number of bytes.
    public let count: Int
    // Owned copy of the bytes; `nonisolated(unsafe)` because it is written only in init and deinit.
    nonisolated(unsafe) let storage: UnsafeMutableRawBufferPointer
    private let cache = Mutex(PreparedCache())

    private struct PreparedCache {
        var zstdCompression: [Int: PreparedZstdCompressionDictionary] = [:]
        var zstdDecompression: PreparedZstdDecompressionDictionary?
        var brotliCompression: [Int: PreparedBrotliDictionary] = [:]
    }

    /// Copies `bytes` and hashes them.
    public init<Bytes: Collection<UInt8>>(bytes: Bytes) {
        let count = bytes.count
        // Allocate at least one byte so the base address is never nil.
        storage = UnsafeMutableRawBufferPointer.allocate(byteCount: max(count, 1), alignment: 16)
        if count > 0 {
            _ = storage.initializeMemory(as: UInt8.self, from: bytes)
        }
        self.count = count
        hash = SHA256.hash(UnsafeRawBufferPointer(rebasing: storage[0..<count]))
    }

    /// Copies `bytes` after checking they hash to `expectedHash` (use when loading a stored dictionary).
    /// Returns nil when they do not.
    public convenience init?<Bytes: Collection<UInt8>>(bytes: Bytes, expectedHash: DictionaryHash) {
        self.init(bytes: bytes)
        guard hash == expectedHash else { return nil }
    }

    deinit { storage.deallocate() }

    /// The dictionary bytes, valid only inside `body`.
    public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try body(UnsafeRawBufferPointer(rebasing: storage[0..<count]))
    }

    /// A copy of the bytes.
    public var bytes: [UInt8] { withUnsafeBytes { Array($0.bindMemory(to: UInt8.self)) } }

    var baseAddress: UnsafeRawPointer { UnsafeRawPointer(storage.baseAddress!) }

    /// The zstd compression form for `level` (a raw-content `ZSTD_CDict`), built on first use.
    func preparedForZstdCompression(level: Int) throws -> PreparedZstdCompressionDictionary {
        try cache.withLock { cache in
            if let prepared = cache.zstdCompression[level] { return prepared }
            let prepared = try PreparedZstdCompressionDictionary(dictionary: self, level: level)
            cache.zstdCompression[level] = prepared
            return prepared
        }
    }

    /// The zstd decompression form (a raw-content `ZSTD_DDict`), built on first use.
    func preparedForZstdDecompression() throws -> PreparedZstdDecompressionDictionary {
        try cache.withLock { cache in
            if let prepared = cache.zstdDecompression { return prepared }
            let prepared = try PreparedZstdDecompressionDictionary(dictionary: self)
            cache.zstdDecompression = prepared
            return prepared
        }
    }

    /// The brotli encoder form for `quality` (RAW `BrotliEncoderPreparedDictionary`), built on first use.
    func preparedForBrotli(quality: Int) throws -> PreparedBrotliDictionary {
        try cache.withLock { cache in
            if let prepared = cache.brotliCompression[quality] { return prepared }
            let prepared = try PreparedBrotliDictionary(dictionary: self, quality: quality)
            cache.brotliCompression[quality] = prepared
            return prepared
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

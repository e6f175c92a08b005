import CZstd

/// A raw-content `ZSTD_CDict` for one compression level, referencing (not copying) the bytes of its
/// `CompressionDictionary`, whose storage it keeps alive.
///
/// Thread-safety: immutable after creation; zstd allows one CDict to be referenced by many `ZSTD_CCtx`
/// on different threads at once.
final class PreparedZstdCompressionDictionary: @unchecked Sendable {
    /// Keeps the bytes this form points into alive (not the dictionary, which caches this form).
    let bytes: CompressionDictionary.Storage
    let level: Int
    let cdict: OpaquePointer
    /// Bytes zstd allocated for this form (match-finder tables: up to ~32× the dictionary at level 19).
    let byteSize: Int

    init(dictionary: CompressionDictionary, level: Int) throws {
        bytes = dictionary.owner
        self.level = level
        // Parameters tuned for the dictionary size with unknown source size (the largest tables for
        // the level). The frame's window log is set per encoder (ZSTD_c_windowLog survives refCDict).
        let cParams = ZSTD_getCParams(Int32(level), UInt64(ZSTD_CONTENTSIZE_UNKNOWN), dictionary.count)
        guard let cdict = ZSTD_createCDict_advanced(
            dictionary.baseAddress, dictionary.count, ZSTD_dlm_byRef, ZSTD_dct_rawContent, cParams,
            ZSTD_customMem(customAlloc: nil, customFree: nil, opaque: nil))
        else {
            throw CodecError.encoderFailure("ZSTD_createCDict_advanced failed (out of memory?)")
        }
        self.cdict = cdict
        byteSize = ZSTD_sizeof_CDict(cdict)
    }

    deinit { ZSTD_freeCDict(cdict) }
}

/// A raw-content `ZSTD_DDict`, referencing the bytes of its `CompressionDictionary`, whose storage it
/// keeps alive. Thread-safety: read-only after creation; shareable by many `ZSTD_DCtx`.
final class PreparedZstdDecompressionDictionary: @unchecked Sendable {
    /// Keeps the bytes this form points into alive (not the dictionary, which caches this form).
    let bytes: CompressionDictionary.Storage
    let ddict: OpaquePointer
    /// Bytes zstd allocated for this form.
    let byteSize: Int

    init(dictionary: CompressionDictionary) throws {
        bytes = dictionary.owner
        guard let ddict = ZSTD_createDDict_advanced(
            dictionary.baseAddress, dictionary.count, ZSTD_dlm_byRef, ZSTD_dct_rawContent,
            ZSTD_customMem(customAlloc: nil, customFree: nil, opaque: nil))
        else {
            throw CodecError.encoderFailure("ZSTD_createDDict_advanced failed (out of memory?)")
        }
        self.ddict = ddict
        byteSize = ZSTD_sizeof_DDict(ddict)
    }

    deinit { ZSTD_freeDDict(ddict) }
}

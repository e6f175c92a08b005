import CBrotli

/// A `BrotliEncoderPreparedDictionary` of type RAW for one quality. Brotli's prepared dictionary is
/// "lean": it points into the source bytes, so it holds a strong reference to its
/// `CompressionDictionary`, whose storage therefore outlives it.
///
/// Thread-safety: read-only after creation; brotli allows attaching one prepared dictionary to many
/// encoders, on different threads, at once.
final class PreparedBrotliDictionary: @unchecked Sendable {
    /// Keeps the bytes this form points into alive (not the dictionary, which caches this form).
    let bytes: CompressionDictionary.Storage
    let quality: Int
    let prepared: OpaquePointer
    /// Bytes brotli allocated for this form (hash tables; the source bytes are not copied).
    let byteSize: Int

    init(dictionary: CompressionDictionary, quality: Int) throws {
        bytes = dictionary.owner
        self.quality = quality
        guard let prepared = BrotliEncoderPrepareDictionary(
            BROTLI_SHARED_DICTIONARY_RAW, dictionary.count,
            dictionary.baseAddress.assumingMemoryBound(to: UInt8.self), Int32(quality), nil, nil, nil)
        else {
            throw CodecError.encoderFailure("BrotliEncoderPrepareDictionary failed (out of memory?)")
        }
        self.prepared = prepared
        byteSize = BrotliEncoderGetPreparedDictionarySize(prepared)
    }

    deinit { BrotliEncoderDestroyPreparedDictionary(prepared) }
}

/// Zstandard decoding (RFC 8878) in Swift only: no C, no Foundation, no system library.
///
/// Thread-safety: stateless; every call owns its buffers, so calls may run concurrently.
public enum PureZstd {
    /// Decodes every frame of `input` in order (skippable frames are skipped) and returns their
    /// concatenated content. An empty input decodes to empty output, as `ZSTD_decompress` does.
    ///
    /// - Parameters:
    ///   - dictionary: raw content that precedes each frame as history (matches may reach into it);
    ///     empty for none. Frames that name a dictionary ID are refused: raw content has none.
    ///   - limits: total output and per-frame window limits, checked before the bytes are produced.
    /// - Throws: `ZstdDecodeError`; never traps on malformed input.
    public static func decompress(_ input: [UInt8], dictionary: [UInt8] = [], limits: ZstdDecodeLimits)
        throws(ZstdDecodeError) -> [UInt8]
    {
        try input.withUnsafeBufferPointer { (inputBytes) throws(ZstdDecodeError) -> [UInt8] in
            try dictionary.withUnsafeBufferPointer { (dictionaryBytes) throws(ZstdDecodeError) -> [UInt8] in
                try decompress(inputBytes, dictionary: dictionaryBytes, limits: limits)
            }
        }
    }

    /// As `decompress(_:dictionary:limits:)`, over borrowed buffers valid for the call.
    public static func decompress(
        _ input: UnsafeBufferPointer<UInt8>, dictionary: UnsafeBufferPointer<UInt8>, limits: ZstdDecodeLimits
    ) throws(ZstdDecodeError) -> [UInt8] {
        var zero: UInt64 = 0
        return try withUnsafeBytes(of: &zero) { (zeroBytes) throws(ZstdDecodeError) -> [UInt8] in
            let empty = zeroBytes.bindMemory(to: UInt8.self).baseAddress ?? UnsafePointer(bitPattern: 1)!
            // When every frame declares its size, decode straight into the result's storage.
            if let total = DeclaredContentSize.total(of: input), total <= limits.maxOutputBytes,
               total <= FrameDecoder.preallocationLimit(inputCount: input.count)
            {
                var failure: ZstdDecodeError?
                let result = [UInt8](unsafeUninitializedCapacity: total + OutputBuffer.slack) { storage, initialized in
                    initialized = 0
                    guard let base = storage.baseAddress else { return }
                    let output = OutputBuffer(fixed: base, capacity: total)
                    let decoder = FrameDecoder(
                        input: input, dictionary: dictionary, limits: limits, empty: empty, output: output)
                    do throws(ZstdDecodeError) {
                        try decoder.decodeAll()
                        initialized = output.count
                    } catch {
                        failure = error
                    }
                }
                if let failure { throw failure }
                return result
            }
            let decoder = FrameDecoder(input: input, dictionary: dictionary, limits: limits, empty: empty)
            try decoder.decodeAll()
            return decoder.output.bytes()
        }
    }
}

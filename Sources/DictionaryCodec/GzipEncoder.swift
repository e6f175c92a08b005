import CZlib

/// Streaming gzip compressor (zlib `deflate` with the gzip wrapper, RFC 1952) at level 0...9
/// (default 6). See `ContentEncoder` for the contract.
public final class GzipEncoder: ContentEncoder {
    public let coding = ContentCoding.gzip
    private let stream: UnsafeMutablePointer<z_stream>
    private let staging = OutputStaging(capacity: 128 * 1024)
    private var finished = false

    public init(level: Int) throws {
        stream = .allocate(capacity: 1)
        stream.initialize(to: z_stream())
        let status = deflateInit2_(
            stream, Int32(ContentCoding.gzip.effectiveLevel(level)), Z_DEFLATED, 15 + 16, 8,
            Z_DEFAULT_STRATEGY, zlibVersion(), Int32(MemoryLayout<z_stream>.size))
        guard status == Z_OK else {
            stream.deallocate()
            throw CodecError.encoderFailure("deflateInit2 failed (\(status))")
        }
    }

    deinit {
        deflateEnd(stream)
        stream.deallocate()
    }

    public func update(_ input: UnsafeRawBufferPointer) throws -> [UInt8] {
        var output: [UInt8] = []
        try deflate(input, Z_NO_FLUSH, into: &output)
        return output
    }

    public func flush() throws -> [UInt8] {
        var output: [UInt8] = []
        try deflate(UnsafeRawBufferPointer(start: nil, count: 0), Z_SYNC_FLUSH, into: &output)
        return output
    }

    public func finish() throws -> [UInt8] {
        var output: [UInt8] = []
        try deflate(UnsafeRawBufferPointer(start: nil, count: 0), Z_FINISH, into: &output)
        finished = true
        return output
    }

    /// One-shot: deflate into a reusable scratch buffer of `deflateBound` bytes, copied out at its
    /// exact size (an array of that size when the bound exceeds the scratch buffers).
    func compressWhole(_ input: UnsafeRawBufferPointer) throws -> [UInt8] {
        guard input.count <= Int(UInt32.max / 2) else {
            var out = try update(input)
            out += try finish()
            return out
        }
        let bound = Int(deflateBound(stream, uLong(input.count)))
        finished = true
        /// Deflates the whole input into `base` (`bound` bytes); returns the bytes written.
        func encode(into base: UnsafeMutablePointer<UInt8>) throws -> Int {
            stream.pointee.next_in = UnsafeMutablePointer(mutating: input.baseAddress?.assumingMemoryBound(to: Bytef.self))
            stream.pointee.avail_in = uInt(input.count)
            stream.pointee.next_out = base
            stream.pointee.avail_out = uInt(bound)
            let status = CZlib.deflate(stream, Z_FINISH)
            guard status == Z_STREAM_END else { throw CodecError.encoderFailure("deflate did not finish (\(status))") }
            return bound - Int(stream.pointee.avail_out)
        }
        return try EncodeOutputScratch.shared.encodeExact(capacity: bound) { try encode(into: $0) }
    }

    private func deflate(_ input: UnsafeRawBufferPointer, _ mode: Int32, into output: inout [UInt8]) throws {
        guard !finished else { throw CodecError.encoderFailure("encoder already finished") }
        var remaining = input
        repeat {
            // zlib counts in 32 bits: feed at most 1 GiB per call.
            let piece = UnsafeRawBufferPointer(rebasing: remaining.prefix(1 << 30))
            remaining = UnsafeRawBufferPointer(rebasing: remaining[piece.count...])
            let last = remaining.isEmpty
            let flush = last ? mode : Z_NO_FLUSH
            stream.pointee.next_in = UnsafeMutablePointer(mutating: piece.baseAddress?.assumingMemoryBound(to: Bytef.self))
            stream.pointee.avail_in = uInt(piece.count)
            while true {
                stream.pointee.next_out = staging.base
                stream.pointee.avail_out = uInt(staging.capacity)
                let status = CZlib.deflate(stream, flush)
                guard status == Z_OK || status == Z_STREAM_END || status == Z_BUF_ERROR else {
                    throw CodecError.encoderFailure("deflate failed (\(status))")
                }
                staging.drain(staging.capacity - Int(stream.pointee.avail_out), into: &output)
                if status == Z_STREAM_END { break }
                if stream.pointee.avail_in == 0 && stream.pointee.avail_out != 0 { break }
            }
        } while !remaining.isEmpty
    }
}

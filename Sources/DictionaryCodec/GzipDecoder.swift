import CZlib

/// Streaming gzip decompressor (zlib `inflate`, gzip wrapper only). Exactly one gzip member is
/// accepted; bytes after it are `CodecError.trailingData`. See `ContentDecoder` for the contract.
public final class GzipDecoder: ContentDecoder {
    public let coding = ContentCoding.gzip
    private let stream: UnsafeMutablePointer<z_stream>
    private var budget: OutputBudget
    private let staging = OutputStaging(capacity: 128 * 1024)
    private var streamComplete = false
    private var started = false

    public init(limits: DecodeLimits = .default) throws {
        budget = OutputBudget(limit: limits.maxOutput)
        stream = .allocate(capacity: 1)
        stream.initialize(to: z_stream())
        let status = inflateInit2_(stream, 15 + 16, zlibVersion(), Int32(MemoryLayout<z_stream>.size))
        guard status == Z_OK else {
            stream.deallocate()
            throw CodecError.encoderFailure("inflateInit2 failed (\(status))")
        }
    }

    deinit {
        inflateEnd(stream)
        stream.deallocate()
    }

    public func update(_ input: UnsafeRawBufferPointer) throws -> [UInt8] {
        guard !input.isEmpty else { return [] }
        guard !streamComplete else { throw CodecError.trailingData }
        started = true
        var output: [UInt8] = []
        var remaining = input
        while !remaining.isEmpty {
            let piece = UnsafeRawBufferPointer(rebasing: remaining.prefix(1 << 30))
            remaining = UnsafeRawBufferPointer(rebasing: remaining[piece.count...])
            stream.pointee.next_in = UnsafeMutablePointer(mutating: piece.baseAddress?.assumingMemoryBound(to: Bytef.self))
            stream.pointee.avail_in = uInt(piece.count)
            while true {
                stream.pointee.next_out = staging.base
                stream.pointee.avail_out = uInt(staging.capacity)
                let status = inflate(stream, Z_NO_FLUSH)
                let produced = staging.capacity - Int(stream.pointee.avail_out)
                switch status {
                case Z_OK, Z_BUF_ERROR, Z_STREAM_END: break
                case Z_MEM_ERROR: throw CodecError.encoderFailure("zlib: out of memory")
                default:
                    let reason = stream.pointee.msg.map { String(cString: $0) } ?? "status \(status)"
                    throw CodecError.corrupt("gzip: \(reason)")
                }
                try budget.add(produced)
                staging.drain(produced, into: &output)
                if status == Z_STREAM_END {
                    streamComplete = true
                    if stream.pointee.avail_in > 0 || !remaining.isEmpty { throw CodecError.trailingData }
                    return output
                }
                if stream.pointee.avail_in == 0 && stream.pointee.avail_out != 0 { break }
                if status == Z_BUF_ERROR && produced == 0 { break }
            }
        }
        return output
    }

    public func finish() throws -> [UInt8] {
        guard started, streamComplete else { throw CodecError.truncated }
        return []
    }
}

import DictionaryCodec
import HTTPServer

/// A response body decoded on the fly from an upstream's content coding (gzip, br, zstd) to identity,
/// for a client that does not accept that coding: each chunk is fed to a streaming decoder and its
/// output written on, so memory stays bounded by one chunk's output whatever the decoded size.
///
/// Back-pressure is kept: the producer's `then` runs when the decoded bytes were taken (or at once when
/// the decoder produced nothing yet). A decoding error aborts the response (the client sees a truncated
/// body, never a wrong one).
enum StreamingDecodedBody {
    /// `inner`'s chunks decoded from `coding`.
    static func wrap(_ inner: StreamBody, coding: ContentCoding) -> StreamBody {
        StreamBody { writer in
            guard let decoder = try? coding.makeDecoder(limits: DecodeLimits(maxOutput: Int.max)) else { return writer.abort() }
            inner.produce(CodingBodyWriter(outer: writer, coder: .decoder(decoder)))
        }
    }

    /// The whole encoded `body`, decoded from `coding` in chunks of `chunkBytes`.
    static func decoding(_ body: [UInt8], coding: ContentCoding, chunkBytes: Int = 64 << 10) -> StreamBody {
        wrap(StreamBody { writer in
            @Sendable func write(from offset: Int) {
                guard offset < body.count else { return writer.finish() }
                let end = min(offset + chunkBytes, body.count)
                writer.write(Array(body[offset..<end])) {
                    if writer.isCancelled { return writer.abort() }
                    write(from: end)
                }
            }
            write(from: 0)
        }, coding: coding)
    }
}

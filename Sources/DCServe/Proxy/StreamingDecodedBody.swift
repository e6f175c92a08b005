import DictionaryCodec
import HTTPServer
import Synchronization

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
            inner.produce(DecodingWriter(outer: writer, decoder: decoder))
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

/// The writer the inner producer sees. The producer writes one chunk at a time (the
/// `ResponseBodyWriter` contract), so the decoder is used serially; a `Mutex` guards it anyway.
private final class DecodingWriter: ResponseBodyWriter, @unchecked Sendable {
    let outer: any ResponseBodyWriter
    private let decoder: Mutex<(any ContentDecoder)?>

    init(outer: any ResponseBodyWriter, decoder: sending any ContentDecoder) {
        self.outer = outer
        self.decoder = Mutex(decoder)
    }

    var isCancelled: Bool { outer.isCancelled }

    func write(_ chunk: [UInt8], then: @escaping @Sendable () -> Void) {
        let decoded: [UInt8]?
        do {
            decoded = try decoder.withLock { d in try d.map { try $0.update(chunk) } }
        } catch {
            decoder.withLock { $0 = nil }
            outer.abort()
            return then()
        }
        guard let decoded else { return then() }  // aborted earlier: drop
        if decoded.isEmpty { then() } else { outer.write(decoded, then: then) }
    }

    func finish() {
        let rest: [UInt8]?
        do {
            rest = try decoder.withLock { d in defer { d = nil }; return try d.map { try $0.finish() } }
        } catch {
            return outer.abort()
        }
        guard let rest else { return }
        if rest.isEmpty { return outer.finish() }
        let outer = self.outer
        outer.write(rest) { outer.finish() }
    }

    func abort() {
        decoder.withLock { $0 = nil }
        outer.abort()
    }
}

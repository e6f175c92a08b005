import DictionaryCodec
import HTTPServer
import Synchronization

/// A streamed response body compressed on the fly: wraps the inner `StreamBody` so that each chunk
/// its producer writes is fed to a streaming encoder (one coding, the fast level, no dictionary) and
/// the encoder's output is written on. Used by the compression middleware for bodies too large to
/// buffer (a proxied response beyond `maxBufferedBodyBytes`).
///
/// Back-pressure is kept: the inner producer's `then` runs when the encoded bytes were taken (or at
/// once when the encoder produced nothing yet). An encoder error aborts the response (the client
/// sees a truncated body, never a wrong one).
enum StreamingEncodedBody {
    static func wrap(_ inner: StreamBody, coding: ContentCoding, level: Int) -> StreamBody {
        StreamBody { writer in
            guard let encoder = try? coding.makeEncoder(level: level) else { return writer.abort() }
            inner.produce(EncodingWriter(outer: writer, encoder: encoder))
        }
    }
}

/// The writer the inner producer sees. Thread-safety: the producer writes one chunk at a time (the
/// `ResponseBodyWriter` contract), so the encoder is used serially; a `Mutex` guards it anyway.
private final class EncodingWriter: ResponseBodyWriter, @unchecked Sendable {
    let outer: any ResponseBodyWriter
    private let encoder: Mutex<(any ContentEncoder)?>

    init(outer: any ResponseBodyWriter, encoder: sending any ContentEncoder) {
        self.outer = outer
        self.encoder = Mutex(encoder)
    }

    var isCancelled: Bool { outer.isCancelled }

    func write(_ chunk: [UInt8], then: @escaping @Sendable () -> Void) {
        let encoded: [UInt8]?
        do {
            encoded = try encoder.withLock { e in try e.map { try $0.update(chunk) } }
        } catch {
            encoder.withLock { $0 = nil }
            outer.abort()
            return then()
        }
        guard let encoded else { return then() }  // aborted earlier: drop
        if encoded.isEmpty { then() } else { outer.write(encoded, then: then) }
    }

    func finish() {
        let rest: [UInt8]?
        do {
            rest = try encoder.withLock { e in defer { e = nil }; return try e.map { try $0.finish() } }
        } catch {
            return outer.abort()
        }
        guard let rest else { return }
        if rest.isEmpty { return outer.finish() }
        let outer = self.outer
        outer.write(rest) { outer.finish() }
    }

    func abort() {
        encoder.withLock { $0 = nil }
        outer.abort()
    }
}

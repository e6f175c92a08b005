import DictionaryCodec
import HTTPServer

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
            inner.produce(CodingBodyWriter(outer: writer, coder: .encoder(encoder)))
        }
    }
}

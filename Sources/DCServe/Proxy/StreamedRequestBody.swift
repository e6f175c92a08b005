import HTTPClient
import HTTPServer

/// A client's request body, as the server streams it (`RequestBodyStream`), offered to the upstream
/// client as a `RequestBodySource`: each pull reads one part from the client's connection, so the
/// client's socket is read only as fast as the upstream takes the body (memory bounded by one read).
/// Thread-safety: both sides call back on the same event loop; the stream allows one read at a time,
/// which the client's pull contract guarantees.
final class StreamedRequestBody: RequestBodySource {
    let stream: RequestBodyStream

    init(_ stream: RequestBodyStream) { self.stream = stream }

    func pull(_ deliver: @escaping @Sendable (RequestBodyPart) -> Void) {
        stream.read { part in
            switch part {
            case .bytes(let bytes): deliver(.bytes(bytes))
            case .end: deliver(.end)
            case .failed: deliver(.failed)
            }
        }
    }
}

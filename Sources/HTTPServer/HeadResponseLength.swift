/// The length an answer to HEAD announces, the handler sending no body (RFC 9110 §9.3.2: the
/// header fields a GET would get, `Content-Length` included only when known, §8.6).
public enum HeadResponseLength: Sendable, Equatable {
    /// The response body's own length (e.g. a static file's HEAD carries the file's length); for a
    /// body of unknown length (a stream) the framing a GET would get.
    case body
    /// This `Content-Length`: the length a GET's body would have (e.g. the upstream's for a proxied HEAD).
    case announced(Int64)
    /// No length at all: neither `Content-Length` nor `Transfer-Encoding` (e.g. the upstream's answer
    /// to HEAD had no valid `Content-Length`). The connection stays open as usual.
    case unannounced
}

import HTTPCore
import HTTPTypes

/// Receives one exchange's response. Every method is called on the exchange's event loop queue, in
/// order: `didReceiveInformational`*, `didReceiveHead`, `didReceiveBodyPart`*, then exactly one of
/// `didFinish` / `didFail` (`didFail` may also come instead of the head). Nothing is called after it.
public protocol HTTPClientResponseDelegate: AnyObject, Sendable {
    /// An interim response (100 Continue, 103 Early Hints). Default: ignored.
    func didReceiveInformational(_ head: HTTPResponse)
    /// The final response head and how its body is delimited.
    func didReceiveHead(_ head: HTTPResponse, bodyLength: HTTPBodyLength)
    /// The final response head as parsed (its bytes and field ranges, framing fields included): for a
    /// delegate that builds its own head from it in one pass (a proxy dropping hop-by-hop fields).
    /// Default: ``didReceiveHead(_:bodyLength:)`` with the head as an `HTTPResponse`. The client calls
    /// this one; a delegate implements one or the other.
    func didReceiveHead(parsed head: ParsedResponseHead)
    /// Body bytes (de-chunked). Back-pressure: the next part (or the end) is delivered only after
    /// `resume` was called (from any thread); until then the upstream socket is not read. The bytes
    /// are the delegate's to keep.
    func didReceiveBodyPart(_ bytes: ArraySlice<UInt8>, resume: @escaping @Sendable () -> Void)
    /// The response is complete; `trailers` holds the trailer fields of a chunked body, if any.
    func didFinish(trailers: HTTPFields?)
    /// The exchange failed (see `HTTPClientError`).
    func didFail(_ error: HTTPClientError)
}

extension HTTPClientResponseDelegate {
    public func didReceiveInformational(_ head: HTTPResponse) {}
    public func didReceiveHead(parsed head: ParsedResponseHead) {
        didReceiveHead(head.makeHTTPResponse(), bodyLength: head.bodyLength)
    }
}

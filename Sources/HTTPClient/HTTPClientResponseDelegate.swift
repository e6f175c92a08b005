import HTTPCore
import HTTPTypes

/// Receives one exchange's response. Every method is called on the exchange's event loop queue, in
/// order: `didReceiveInformational`*, `didReceiveHead`, `didReceiveBodyPart`*, then exactly one of
/// `didFinish` / `didFail` (`didFail` may also come instead of the head). Nothing is called after it.
/// A request that asked to switch protocols (`HTTPClientRequest.upgrade`) and got `101` instead
/// ends with `didSwitchProtocols` alone (after any informational heads).
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
    /// The server switched protocols (`101`): `head` is its answer, `connection` the upstream
    /// socket (out of the pool, off the loop) with any bytes that followed the head; the delegate
    /// owns it. Default: closes it, then reports the head as a response without a body
    /// (`didReceiveHead(parsed:)`, `didFinish`).
    func didSwitchProtocols(_ head: ParsedResponseHead, connection: DetachedConnection)
}

extension HTTPClientResponseDelegate {
    public func didSwitchProtocols(_ head: ParsedResponseHead, connection: DetachedConnection) {
        connection.close()
        didReceiveHead(parsed: head)
        didFinish(trailers: nil)
    }
    public func didReceiveInformational(_ head: HTTPResponse) {}
    public func didReceiveHead(parsed head: ParsedResponseHead) {
        didReceiveHead(head.makeHTTPResponse(), bodyLength: head.bodyLength)
    }
}

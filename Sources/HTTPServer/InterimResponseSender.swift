import Dispatch
import HTTPCore
import HTTPTypes

/// Sends interim (1xx) responses ahead of a request's final response (RFC 9110 §15.2): a
/// `103 Early Hints` an upstream sent, say. Handed to handlers as `HTTPServerRequest.interim`.
///
/// What is sent: 1xx statuses other than `100 Continue` (the server answers `Expect` itself, see
/// `RequestBodyStream`) and `101 Switching Protocols` (an upgrade, not an interim response), and
/// only while the request's final response has not begun; anything else is dropped. The fields go
/// out as given, without the ones the server owns (framing, `Connection`): the caller removes
/// hop-by-hop fields. Requests from HTTP/1.0 clients, which must not receive 1xx, and requests not
/// read from a socket get no sender (nil).
///
/// Ordering: an interim response sent before the handler's `respond` on the same thread (or from the
/// connection's event loop) precedes the final response on the wire. Thread-safety: `send` may be
/// called from any thread. A sender kept past its request, or past its connection, sends nothing.
public struct InterimResponseSender: Sendable {
    let channel: InterimResponseChannel
    /// The request's position on its connection.
    let sequenceNumber: Int

    /// Whether `status` is an interim response this type forwards.
    public static func isSendable(_ status: HTTPResponse.Status) -> Bool {
        status.code >= 102 && status.code <= 199
    }

    /// Queues `response` (see the type's rules) ahead of the final response.
    public func send(_ response: HTTPResponse) {
        guard Self.isSendable(response.status) else { return }
        let channel = channel, sequenceNumber = sequenceNumber
        if channel.loop.isCurrent {
            channel.connection?.sendInterim(response, sequenceNumber: sequenceNumber)
        } else {
            channel.loop.execute { channel.connection?.sendInterim(response, sequenceNumber: sequenceNumber) }
        }
    }
}

/// One connection's end of its requests' `InterimResponseSender`s, made with its first HTTP/1.1
/// request. It holds the connection until the connection closes (`close` clears it), so senders
/// reach a live connection or nothing, and the connection is never referenced weakly (a weak
/// reference would move all its reference counting to a slower side table).
///
/// Thread-safety (why `@unchecked Sendable` is sound): `connection` is read and cleared only on
/// `loop.queue`; `loop` is immutable.
final class InterimResponseChannel: @unchecked Sendable {
    let loop: EventLoop
    var connection: Connection?

    init(loop: EventLoop, connection: Connection) {
        self.loop = loop
        self.connection = connection
    }
}

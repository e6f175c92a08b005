import HTTPTypes

/// A response head serialised once, for a response that is sent many times unchanged (a cache's or a
/// memo's answer): the connection then copies its bytes instead of serialising every field again.
///
/// Attach it with ``HTTPServerResponse/init(prepared:body:)``. Any change to the response's `head`
/// afterwards detaches it (see ``HTTPServerResponse/prepared``), so the bytes sent are always those
/// of the head the response carries. Immutable, so `Sendable`; share it freely.
public final class PreparedHead: Sendable {
    public let head: HTTPResponse
    /// Status line and every field line but the ones the server owns (framing, `Connection`).
    let lines: [UInt8]
    /// Whether the handler set `Date` / `Server` itself (the server then adds none).
    let hasDate: Bool
    let hasServer: Bool

    public init(_ head: HTTPResponse) {
        self.head = head
        var lines: [UInt8] = []
        let (hasDate, hasServer) = ResponseWriter.appendStatusAndFields(head, into: &lines)
        self.lines = lines
        self.hasDate = hasDate
        self.hasServer = hasServer
    }
}

/// A connection's byte stream, taken over from its HTTP layer after a protocol switch (`101
/// Switching Protocols`): the transport (open, and out of every event loop), the loop it must be
/// used on, the input read beyond the HTTP message, and the output queued but not yet written.
///
/// Ownership: whoever receives it owns the transport: ``ByteTunnel`` takes it (``take()``); one
/// never taken is closed when the last reference goes (so a switch that nobody completes leaks no
/// socket). Thread-safety: immutable apart from the taken flag, which only the loop's queue reads and
/// writes (`@unchecked Sendable` so it can travel in a `@Sendable` closure to that queue).
public final class DetachedConnection: @unchecked Sendable {
    public let transport: any ByteTransport
    /// The event loop whose queue the transport must be used on.
    public let loop: EventLoop
    /// Bytes read from the peer after the HTTP message, not yet consumed.
    public let bufferedInput: [UInt8]
    /// Bytes queued for the peer (the end of the `101` head, say), not yet written.
    public let pendingOutput: [UInt8]
    private var taken = false

    public init(transport: any ByteTransport, loop: EventLoop, bufferedInput: [UInt8] = [], pendingOutput: [UInt8] = []) {
        self.transport = transport
        self.loop = loop
        self.bufferedInput = bufferedInput
        self.pendingOutput = pendingOutput
    }

    /// Takes ownership of the transport (on `loop.queue`): it is no longer closed with this object.
    /// False when it was taken already.
    public func take() -> Bool {
        if taken { return false }
        taken = true
        return true
    }

    /// Closes the transport unless it was taken.
    public func close() {
        guard take() else { return }
        transport.close()
    }

    deinit { if !taken { transport.close() } }
}

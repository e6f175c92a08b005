/// The connection's side of streamed request bodies (``RequestBodyStream``): which stream is current
/// (one generation per request, so a read of an earlier request's stream is refused) and the
/// handler's outstanding read.
///
/// Ownership and thread-safety: a value owned by one `Connection` and used only on its queue. It
/// never runs the handler's callback: `take()` hands it to the connection, which calls it after this
/// value's access has ended (the callback may read again at once).
struct RequestBodyReader {
    typealias Read = @Sendable (RequestBodyStream.Part) -> Void

    /// The current stream's generation (0 before the first).
    private(set) var generation: UInt64 = 0
    private var pendingRead: Read?

    /// Whether the handler has a read outstanding.
    var hasPendingRead: Bool { pendingRead != nil }

    /// Starts the stream of a new request; returns its generation.
    mutating func begin() -> UInt64 {
        generation += 1
        return generation
    }

    /// Whether a read of the stream of `generation` may wait for a part: it is the current stream's
    /// and no other read is outstanding.
    func accepts(_ generation: UInt64) -> Bool { generation == self.generation && pendingRead == nil }

    /// Keeps `read` until the next part.
    mutating func wait(_ read: @escaping Read) { pendingRead = read }

    /// The outstanding read, removed (nil when there is none).
    mutating func take() -> Read? {
        let read = pendingRead
        pendingRead = nil
        return read
    }
}

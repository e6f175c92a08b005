import CLinux

/// The epoll bits an `EventLoopMember.handleEvents` mask is read with: one definition for the server's
/// connections and the upstream client's (HTTPClient does not import the C shim).
public enum ReadinessMask {
    /// A read would not block: input, an error, a hangup or the peer's FIN.
    public static let readable: UInt32 = EPOLLIN.rawValue | EPOLLRDHUP.rawValue | EPOLLHUP.rawValue | EPOLLERR.rawValue
    /// The peer has sent its FIN (or the connection hung up): it may sit behind the data without a new edge.
    public static let peerClosed: UInt32 = EPOLLRDHUP.rawValue | EPOLLHUP.rawValue
}

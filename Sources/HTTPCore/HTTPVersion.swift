/// HTTP version of a request line (`HTTP/1.0` or `HTTP/1.1`; `HTTP/1.x` with x > 1 is read as 1.1).
public struct HTTPVersion: Hashable, Sendable {
    public var major: Int
    public var minor: Int
    public static let http1_0 = HTTPVersion(major: 1, minor: 0)
    public static let http1_1 = HTTPVersion(major: 1, minor: 1)

    public init(major: Int, minor: Int) {
        self.major = major
        self.minor = minor
    }
}


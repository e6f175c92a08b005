/// Resource limits the pure-Swift decoder enforces on untrusted input.
public struct ZstdDecodeLimits: Sendable, Hashable {
    /// Largest total decoded size (all frames together); decoding stops with
    /// `ZstdDecodeError.outputTooLarge` before producing more.
    public var maxOutputBytes: Int
    /// Largest frame window accepted (for a single-segment frame, its content size);
    /// larger frames fail with `ZstdDecodeError.windowTooLarge` before any block is decoded.
    public var maxWindowBytes: Int

    public init(maxOutputBytes: Int, maxWindowBytes: Int) {
        self.maxOutputBytes = max(0, maxOutputBytes)
        self.maxWindowBytes = max(0, maxWindowBytes)
    }
}

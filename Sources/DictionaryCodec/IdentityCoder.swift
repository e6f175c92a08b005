/// The `identity` coding as encoder and decoder: bytes pass through unchanged (decoding still
/// enforces `DecodeLimits.maxOutput`).
public final class IdentityCoder: ContentEncoder, ContentDecoder {
    public let coding = ContentCoding.identity
    private let maxOutput: Int
    private var total = 0

    public init(limits: DecodeLimits = DecodeLimits(maxOutput: .max)) { maxOutput = limits.maxOutput }

    public func update(_ input: UnsafeRawBufferPointer) throws -> [UInt8] {
        total += input.count
        guard total <= maxOutput else { throw CodecError.outputLimitExceeded(limit: maxOutput) }
        return Array(input)
    }

    public func flush() throws -> [UInt8] { [] }
    public func finish() throws -> [UInt8] { [] }
}

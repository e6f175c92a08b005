import DictionaryCodec
import HTTPTypes

/// Assigns a request to an ``ExperimentGroup`` from its client id: SHA-256 of the key source and the
/// id, read as a number in [0, 1), below `controlShare` → control. The same id gets the same group
/// in every process, across restarts and instances (no secret or state is involved); ids are spread
/// uniformly whatever their form. Requests without an id are ``ExperimentGroup/unkeyed``.
/// Immutable; thread-safe.
public struct ExperimentAssignment: Sendable {
    public let source: ExperimentKeySource
    public let controlShare: Double

    public init(source: ExperimentKeySource, controlShare: Double) {
        self.source = source
        self.controlShare = controlShare
    }

    public func group(of fields: HTTPFields) -> ExperimentGroup {
        guard let id = source.value(in: fields) else { return .unkeyed }
        return group(ofClient: id)
    }

    /// The group of client id `id` (its position in [0, 1) compared with `controlShare`).
    public func group(ofClient id: String) -> ExperimentGroup {
        Self.position(of: id, domain: source.domain) < controlShare ? .control : .dictionary
    }

    /// The first 53 bits of SHA-256("dcserve-experiment\n" ‖ domain ‖ "\n" ‖ id) as a fraction of 2^53.
    static func position(of id: String, domain: String) -> Double {
        let digest = SHA256.hash(Array("dcserve-experiment\n\(domain)\n".utf8) + Array(id.utf8)).bytes
        var n: UInt64 = 0
        for byte in digest.prefix(8) { n = n << 8 | UInt64(byte) }
        return Double(n >> 11) / Double(UInt64(1) << 53)
    }
}

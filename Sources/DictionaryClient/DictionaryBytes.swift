import Crypto
import DictionaryCodecTypes

/// A dictionary's bytes and their SHA-256, the identity RFC 9842 puts on the wire.
///
/// A value type (the bytes are a copy-on-write array), `Sendable`; every instance was hashed when it
/// was made, so ``hash`` always describes ``bytes``. SHA-256 comes from swift-crypto (`Crypto`, which is
/// CryptoKit on Apple platforms).
public struct DictionaryBytes: Sendable, Hashable, CustomStringConvertible {
    public let bytes: [UInt8]
    public let hash: DictionaryHash

    /// Hashes `bytes`.
    public init(_ bytes: [UInt8]) {
        self.bytes = bytes
        hash = Self.sha256(bytes)
    }

    /// `bytes` when they hash to `expectedHash` (a stored dictionary being loaded); nil otherwise.
    public init?(_ bytes: [UInt8], expectedHash: DictionaryHash) {
        self.init(bytes)
        guard hash == expectedHash else { return nil }
    }

    public var count: Int { bytes.count }

    public var description: String { "DictionaryBytes(\(hash.hex), \(bytes.count) bytes)" }

    /// SHA-256 of `bytes`.
    public static func sha256(_ bytes: some Sequence<UInt8>) -> DictionaryHash {
        DictionaryHash(bytes: Array(SHA256.hash(data: Array(bytes))))!
    }
}

import Foundation
import COpenSSL

/// SHA-256 through OpenSSL's EVP API.
///
/// `SHA256.hash(_:)` is a pure function and safe to call from any thread. `SHA256.Hasher` is a
/// streaming context owned by one caller at a time (not thread-safe); it frees its EVP context on
/// deinit.
public enum SHA256 {
    /// Hashes `bytes` in one call.
    public static func hash(_ bytes: UnsafeRawBufferPointer) -> DictionaryHash {
        var digest = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        let ok = digest.withUnsafeMutableBufferPointer { out in
            EVP_Digest(bytes.baseAddress, bytes.count, out.baseAddress, &length, EVP_sha256(), nil)
        }
        precondition(ok == 1 && length == 32, "EVP_Digest(SHA-256) failed")
        return DictionaryHash(validatedBytes: digest)
    }

    /// Hashes any contiguous byte collection (`[UInt8]`, `Data`, slices).
    public static func hash<Bytes: ContiguousBytes>(_ bytes: Bytes) -> DictionaryHash {
        bytes.withUnsafeBytes { hash($0) }
    }

    /// Incremental SHA-256 for data that arrives in pieces (files, streamed bodies).
    public final class Hasher {
        private let context: OpaquePointer

        public init() {
            guard let ctx = EVP_MD_CTX_new(), EVP_DigestInit_ex(ctx, EVP_sha256(), nil) == 1 else {
                fatalError("EVP_DigestInit_ex(SHA-256) failed")
            }
            context = ctx
        }

        deinit { EVP_MD_CTX_free(context) }

        public func update(_ bytes: UnsafeRawBufferPointer) {
            guard bytes.count > 0 else { return }
            precondition(EVP_DigestUpdate(context, bytes.baseAddress, bytes.count) == 1)
        }

        public func update<Bytes: ContiguousBytes>(_ bytes: Bytes) {
            bytes.withUnsafeBytes { update($0) }
        }

        /// Finishes the hash. The hasher must not be used afterwards.
        public func finalize() -> DictionaryHash {
            var digest = [UInt8](repeating: 0, count: 32)
            var length: UInt32 = 0
            let ok = digest.withUnsafeMutableBufferPointer { EVP_DigestFinal_ex(context, $0.baseAddress, &length) }
            precondition(ok == 1 && length == 32, "EVP_DigestFinal_ex(SHA-256) failed")
            return DictionaryHash(validatedBytes: digest)
        }
    }
}

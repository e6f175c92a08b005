import CBrotli
import COpenSSL
import CZstd

/// Versions of the C libraries dcserve is linked with, read from the libraries at run time (not from
/// the headers), so `dcserve --version` shows what is really linked.
public enum LibraryVersions {
    /// Minimum brotli with the shared-dictionary API (dcb).
    public static let minimumBrotli: UInt32 = 0x0100_1000

    public static var zstd: String { String(cString: ZSTD_versionString()) }

    public static var brotli: String {
        let v = BrotliEncoderVersion()
        return "\(v >> 24).\((v >> 12) & 0xfff).\(v & 0xfff)"
    }

    public static var openSSL: String { String(cString: OpenSSL_version(Int32(OPENSSL_VERSION))) }

    /// True when the linked brotli encoder and decoder are both >= 1.1.0.
    public static var brotliSupportsDictionaries: Bool {
        BrotliEncoderVersion() >= minimumBrotli && BrotliDecoderVersion() >= minimumBrotli
    }
}

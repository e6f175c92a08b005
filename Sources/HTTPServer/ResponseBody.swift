#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The body of a response.
///
/// - `bytes`: sent with `Content-Length`.
/// - `file`: a byte range of an open file, sent with `Content-Length` in chunks (sendfile on plain
///   TCP) without loading the file into memory. Middleware that needs the bytes calls
///   `FileBody.readAll()`.
/// - `stream`: produced while sending, with back-pressure; sent with chunked transfer coding
///   (HTTP/1.1) or delimited by closing the connection (HTTP/1.0).
public enum ResponseBody: Sendable {
    case bytes([UInt8])
    case file(FileBody)
    case stream(StreamBody)

    public static var empty: ResponseBody { .bytes([]) }

    /// Body length when known before sending (nil for streams).
    public var knownLength: Int64? {
        switch self {
        case .bytes(let b): return Int64(b.count)
        case .file(let f): return Int64(f.range.count)
        case .stream: return nil
        }
    }
}

/// An open, read-only file descriptor, closed when the last reference goes away.
///
/// Thread-safety: immutable after init; `pread` at explicit offsets never moves a shared file
/// position, so concurrent readers are safe.
public final class OpenFile: Sendable {
    public let descriptor: Int32
    /// Size of the file when it was opened (from `fstat`).
    public let size: Int64

    /// Takes ownership of `descriptor`.
    public init(descriptor: Int32, size: Int64) {
        self.descriptor = descriptor
        self.size = size
    }

    /// Opens `path` read-only. Throws `POSIXErrorCode`-carrying `FileOpenError` when it cannot.
    public convenience init(path: String) throws {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw FileOpenError(path: path, errno: errno) }
        var st = stat()
        guard fstat(fd, &st) == 0 else { let e = errno; close(fd); throw FileOpenError(path: path, errno: e) }
        self.init(descriptor: fd, size: Int64(st.st_size))
    }

    deinit { close(descriptor) }
}

public struct FileOpenError: Error, CustomStringConvertible {
    public let path: String
    public let errno: Int32
    public var description: String { "cannot open \(path): \(String(cString: strerror(errno)))" }
}

/// A byte range of an open file as a response body.
public struct FileBody: Sendable {
    public let file: OpenFile
    public let range: Range<Int64>

    public init(file: OpenFile, range: Range<Int64>) {
        self.file = file
        self.range = range
    }

    public init(file: OpenFile) { self.init(file: file, range: 0..<file.size) }

    /// Reads the whole range into memory (for middleware that transforms the bytes).
    public func readAll() throws -> [UInt8] {
        let count = Int(range.count)
        var result = [UInt8](repeating: 0, count: count)
        var done = 0
        try result.withUnsafeMutableBytes { buf in
            while done < count {
                let n = pread(file.descriptor, buf.baseAddress! + done, count - done, off_t(range.lowerBound) + off_t(done))
                if n < 0 {
                    if errno == EINTR { continue }
                    throw FileOpenError(path: "fd \(file.descriptor)", errno: errno)
                }
                if n == 0 { break }  // file shrank
                done += n
            }
        }
        if done < count { result.removeLast(count - done) }
        return result
    }
}

/// A body produced while it is sent. `produce` is called once, off the connection queue, with a writer;
/// for a response that sends no body (an answer to HEAD, a 204 or 304) or is not sent at all (its
/// connection closed first) the writer is cancelled from the start (see ``ResponseBodyWriter``).
public struct StreamBody: Sendable {
    public let produce: @Sendable (ResponseBodyWriter) -> Void

    public init(_ produce: @escaping @Sendable (ResponseBodyWriter) -> Void) { self.produce = produce }
}

/// The sink a `StreamBody` writes into.
///
/// Contract: call `write(_:then:)` with the next chunk and wait for `then` before writing again
/// (back-pressure: `then` runs once the bytes are handed to the socket, so a slow reader slows the
/// producer instead of growing a buffer). Finish with exactly one `finish()` or `abort()`. If the
/// client goes away, `then` is still called and `isCancelled` becomes true; later writes are dropped.
/// `then` is called on the connection's queue: do not block in it. The async `write(_:)` wraps this.
public protocol ResponseBodyWriter: AnyObject, Sendable {
    func write(_ chunk: [UInt8], then: @escaping @Sendable () -> Void)
    func finish()
    func abort()
    var isCancelled: Bool { get }
}

extension ResponseBodyWriter {
    /// Writes a chunk and returns once the connection accepted it (back-pressure).
    public func write(_ chunk: [UInt8]) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            write(chunk) { continuation.resume() }
        }
    }
}

import HTTPServer

/// A body writer for a stream nobody will read (a HEAD answered from a streamed GET): cancelled from
/// the start, so a producer that checks `isCancelled` after its first write stops there (a proxied
/// stream cancels its upstream exchange); everything written is dropped. Stateless; thread-safe.
final class CancelledBodyWriter: ResponseBodyWriter {
    func write(_ chunk: [UInt8], then: @escaping @Sendable () -> Void) { then() }
    func finish() {}
    func abort() {}
    var isCancelled: Bool { true }
}

import DictionaryCodec
import HTTPServer
import Locking

/// A streaming encoder or decoder, as a body writer drives it: each chunk in, its output out, the
/// rest at the end.
enum StreamingCoder {
    case encoder(any ContentEncoder)
    case decoder(any ContentDecoder)

    func update(_ chunk: [UInt8]) throws -> [UInt8] {
        switch self {
        case .encoder(let e): try e.update(chunk)
        case .decoder(let d): try d.update(chunk)
        }
    }

    func finish() throws -> [UInt8] {
        switch self {
        case .encoder(let e): try e.finish()
        case .decoder(let d): try d.finish()
        }
    }
}

/// The writer a streamed body's producer sees when dcserve recodes the body on the fly
/// (``StreamingEncodedBody``, ``StreamingDecodedBody``): each chunk goes through the coder and its
/// output is written on.
///
/// Back-pressure is kept: the producer's `then` runs when the coded bytes were taken (or at once when
/// the coder produced nothing yet). A coder error aborts the response (the client sees a truncated
/// body, never a wrong one). Thread-safety: the producer writes one chunk at a time (the
/// `ResponseBodyWriter` contract), so the coder is used serially; a `Locked` guards it anyway.
final class CodingBodyWriter: ResponseBodyWriter, @unchecked Sendable {
    let outer: any ResponseBodyWriter
    private let coder: Locked<StreamingCoder?>

    init(outer: any ResponseBodyWriter, coder: sending StreamingCoder) {
        self.outer = outer
        self.coder = Locked(coder)
    }

    var isCancelled: Bool { outer.isCancelled }

    func write(_ chunk: [UInt8], then: @escaping @Sendable () -> Void) {
        let coded: [UInt8]?
        do {
            coded = try coder.withLock { c in try c.map { try $0.update(chunk) } }
        } catch {
            coder.withLock { $0 = nil }
            outer.abort()
            return then()
        }
        guard let coded else { return then() }  // aborted earlier: drop
        if coded.isEmpty { then() } else { outer.write(coded, then: then) }
    }

    func finish() {
        let rest: [UInt8]?
        do {
            rest = try coder.withLock { c in defer { c = nil }; return try c.map { try $0.finish() } }
        } catch {
            return outer.abort()
        }
        guard let rest else { return }
        if rest.isEmpty { return outer.finish() }
        let outer = self.outer
        outer.write(rest) { outer.finish() }
    }

    func abort() {
        coder.withLock { $0 = nil }
        outer.abort()
    }
}

import Foundation

/// Removes the chunked transfer coding (RFC 9112 §7.1) from a body fed in pieces of any size, for
/// ``FetchHTTPExchange``: chunk data is handed on as it arrives, never collected. Size lines and
/// trailer lines end with CRLF and are at most `maxLineBytes` long; sizes are at most 15 hex digits;
/// chunk extensions and trailer fields are skipped. A value used by one exchange; not thread-safe.
struct ChunkedBodyReader {
    struct Malformed: Error { let reason: String }

    static let maxLineBytes = 4096

    private enum State {
        case sizeLine
        case data(remaining: Int)
        /// The CRLF after a chunk's data; `seen` bytes of it read.
        case dataEnd(seen: Int)
        case trailerLine
        case complete
    }

    private var state = State.sizeLine
    private var line: [UInt8] = []

    /// Whether the last chunk and the trailer section were read; bytes after them are ignored.
    var isComplete: Bool {
        if case .complete = state { return true }
        return false
    }

    /// Consumes `bytes`, calling `emit` with each run of chunk data. Throws ``Malformed`` on a framing
    /// error, or what `emit` throws.
    mutating func consume(_ bytes: ArraySlice<UInt8>, emit: (ArraySlice<UInt8>) throws -> Void) throws {
        var i = bytes.startIndex
        while i < bytes.endIndex {
            switch state {
            case .complete:
                return
            case .data(let remaining):
                let end = min(bytes.endIndex, i + remaining)
                try emit(bytes[i..<end])
                state = remaining - (end - i) == 0 ? .dataEnd(seen: 0) : .data(remaining: remaining - (end - i))
                i = end
            case .dataEnd(let seen):
                guard bytes[i] == (seen == 0 ? 13 : 10) else { throw Malformed(reason: "chunk not followed by CRLF") }
                i += 1
                state = seen == 0 ? .dataEnd(seen: 1) : .sizeLine
            case .sizeLine, .trailerLine:
                guard let lf = bytes[i...].firstIndex(of: 10) else {
                    line.append(contentsOf: bytes[i...])
                    guard line.count <= Self.maxLineBytes else { throw Malformed(reason: "chunk size or trailer line too long") }
                    return
                }
                line.append(contentsOf: bytes[i..<lf])
                i = lf + 1
                guard line.count <= Self.maxLineBytes + 1, line.last == 13 else {
                    throw Malformed(reason: line.last == 13 ? "chunk size or trailer line too long" : "chunk line not ended by CRLF")
                }
                line.removeLast()
                defer { line.removeAll(keepingCapacity: true) }
                if case .trailerLine = state {
                    if line.isEmpty { state = .complete }
                    continue
                }
                let sizeText = String(decoding: line, as: UTF8.self)
                    .split(separator: ";", maxSplits: 1, omittingEmptySubsequences: false)[0]
                    .trimmingCharacters(in: .whitespaces)
                guard !sizeText.isEmpty, sizeText.count <= 15, let size = Int(sizeText, radix: 16), size >= 0,
                      !sizeText.hasPrefix("+"), !sizeText.hasPrefix("-") else {
                    throw Malformed(reason: "malformed chunk size line")
                }
                state = size == 0 ? .trailerLine : .data(remaining: size)
            }
        }
    }
}

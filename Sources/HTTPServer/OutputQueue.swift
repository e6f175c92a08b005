#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import HTTPCore

/// A connection's output in write order: `queued` segments (large in-memory bodies are referenced,
/// not copied, so many slow clients of one cached body share its bytes), then `buffer[bufferSent...]`
/// (heads, small bodies, chunks), then an optional file region (sendfile, or staged through `buffer`
/// where the transport cannot send files).
///
/// Ownership and thread-safety: a value owned by one `Connection` and used only on its queue. It
/// never calls out: what a write means (deadlines, completing a response, closing) is the
/// connection's.
struct OutputQueue {
    struct Segment {
        let bytes: [UInt8]
        var sent: Int
    }
    private(set) var queued: [Segment] = []
    private(set) var queuedUnsent = 0
    /// Heads, small bodies and chunks are appended here; `bufferSent` of its bytes are written.
    var buffer: [UInt8] = []
    private(set) var bufferSent = 0
    /// The file region that follows everything else; written last.
    var pendingFile: (file: OpenFile, offset: Int64, remaining: Int64)?

    /// Bytes queued for writing and not yet written (the file region aside).
    var pendingBytes: Int { queuedUnsent + buffer.count - bufferSent }

    /// Queues an in-memory body. Small ones (at most `inlineLimit` bytes) are copied behind the head
    /// (one write for both); larger ones are written from `bytes` itself, so connections sending the
    /// same body share one copy.
    mutating func appendBody(_ bytes: [UInt8], inlineLimit: Int) {
        if bytes.count <= inlineLimit {
            buffer.append(contentsOf: bytes)
            return
        }
        if bufferSent < buffer.count {
            queued.append(Segment(bytes: buffer, sent: bufferSent))
            queuedUnsent += buffer.count - bufferSent
        }
        buffer = []
        bufferSent = 0
        queued.append(Segment(bytes: bytes, sent: 0))
        queuedUnsent += bytes.count
    }

    /// Reads `range` of `file` onto the end of `buffer`. False when the file could not be read in full.
    mutating func appendFileRange(_ file: OpenFile, _ range: Range<Int64>) -> Bool {
        let count = Int(range.count)
        let old = buffer.count
        buffer.append(contentsOf: repeatElement(0, count: count))
        var done = 0
        while done < count {
            let n = buffer.withUnsafeMutableBytes { b in
                pread(file.descriptor, b.baseAddress! + old + done, count - done, off_t(range.lowerBound) + off_t(done))
            }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { return false }
            done += n
        }
        return true
    }

    /// What one `writeNext` did.
    enum WriteStep: Equatable {
        /// In-memory bytes were written.
        case wrote
        /// File bytes were sent (or staged into `buffer`); `finished`: the file region is done.
        case fileProgress(finished: Bool)
        /// The transport takes nothing now: wait for writability.
        case wouldBlock
        /// The transport failed, or the file could not be read: the connection must close.
        case failed
        /// Nothing is left to write.
        case drained
    }

    /// Writes the next piece of output (a queued segment, the buffer, or up to 1 MiB of the file) with
    /// one transport call. `more` tells the transport when further bytes follow at once.
    mutating func writeNext(to transport: any ByteTransport) -> WriteStep {
        if !queued.isEmpty {
            let segment = queued[0]
            let more = queued.count > 1 || bufferSent < buffer.count || pendingFile != nil
            let result = segment.bytes.withUnsafeBytes { b in
                transport.write(UnsafeRawBufferPointer(rebasing: b[segment.sent...]), more: more)
            }
            switch result {
            case .bytes(let n):
                queuedUnsent -= n
                if segment.sent + n == segment.bytes.count { queued.removeFirst() } else { queued[0].sent += n }
                return .wrote
            case .wouldBlock: return .wouldBlock
            case .failed, .endOfStream: return .failed
            }
        }
        if bufferSent < buffer.count {
            let sent = bufferSent
            let more = pendingFile != nil
            let result = buffer.withUnsafeBytes { b in transport.write(UnsafeRawBufferPointer(rebasing: b[sent...]), more: more) }
            switch result {
            case .bytes(let n):
                bufferSent += n
                if bufferSent == buffer.count { buffer.removeAll(keepingCapacity: true); bufferSent = 0 }  // the sweep frees it when idle
                return .wrote
            case .wouldBlock: return .wouldBlock
            case .failed, .endOfStream: return .failed
            }
        }
        if let file = pendingFile {
            let count = Int(min(file.remaining, 1 << 20))
            if let result = transport.sendFile(file.file.descriptor, offset: file.offset, count: count) {
                switch result {
                case .bytes(let n): return .fileProgress(finished: advanceFile(by: n))
                case .wouldBlock: return .wouldBlock
                case .failed, .endOfStream: return .failed
                }
            } else {
                // Transport cannot send files directly: stage up to 64 KiB through `buffer`.
                let n = Int(min(file.remaining, 64 * 1024))
                guard appendFileRange(file.file, file.offset..<file.offset + Int64(n)) else { return .failed }
                return .fileProgress(finished: advanceFile(by: n))
            }
        }
        return .drained
    }

    /// Moves the file region on by `n` bytes; true when it is done (and removed).
    private mutating func advanceFile(by n: Int) -> Bool {
        guard var file = pendingFile else { return false }
        file.offset += Int64(n)
        file.remaining -= Int64(n)
        if file.remaining <= 0 {
            pendingFile = nil
            return true
        }
        pendingFile = file
        return false
    }

    /// Everything not yet written, in order (the file region aside), and the queue emptied.
    mutating func takeUnsent() -> [UInt8] {
        var unsent: [UInt8] = []
        for segment in queued { unsent += segment.bytes[segment.sent...] }
        unsent += buffer[bufferSent...]
        removeAll()
        return unsent
    }

    /// Drops everything and releases the buffers.
    mutating func removeAll() {
        buffer = []
        bufferSent = 0
        queued = []
        queuedUnsent = 0
    }
}

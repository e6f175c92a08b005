import ByteTransportTesting
import HTTPServer

/// Checks, as it grows, everything a connection wrote in the `connection` fuzz mode: a sequence of
/// well-framed HTTP/1.x responses, the handler's answers (`x-seq`) in request order with the bodies
/// the handler gave (fixed bytes, file ranges, the chunks a stream wrote), interim responses only
/// before a final one, a server-made answer (an error, or the 502 of a switch that cannot happen)
/// only where one fits, and no byte after a response that ended the connection.
///
/// Not thread-safe: the script's thread owns it.
struct ResponseStreamChecker {
    /// Offset of the first byte not yet checked.
    private(set) var at = 0
    /// The next handler answer expected (answers come in request order, one per request).
    private var nextSeq = 0
    /// Set once a response ended the connection (`Connection: close`, a server error): no byte may follow.
    private var ended: String?
    /// Set by a 101: what follows belongs to the tunnel, not to HTTP.
    private(set) var switched = false
    /// A response whose body runs to the end of the connection (a stream to an HTTP/1.0 client).
    private var closeDelimited: (seq: Int, bodyStart: Int)?
    private(set) var responses = 0

    /// Checks what `output` holds beyond what was checked; `closed`: the connection has ended, so a
    /// close-delimited body is complete. Returns a description of the first violation, or nil.
    mutating func check(_ output: [UInt8], world: ConnectionFuzzWorld, closed: Bool) -> String? {
        while at < output.count {
            if switched { return nil }
            if let why = ended { return "\(output.count - at) bytes after a response that ended the connection (\(why))" }
            if let delimited = closeDelimited {
                guard closed else { return nil }
                let body = Array(output[delimited.bodyStart...])
                at = output.count
                return checkStream(seq: delimited.seq, body: body, complete: false, world: world)
            }
            guard let headEnd = firstIndex(of: [13, 10, 13, 10], in: output, from: at) else {
                return output.count - at > 70_000 ? "a response head longer than 70000 bytes" : nil
            }
            let lines = String(decoding: output[at..<headEnd], as: UTF8.self).split(separator: "\r\n", omittingEmptySubsequences: false)
            let statusLine = lines[0].utf8
            guard statusLine.count >= 12, lines[0].hasPrefix("HTTP/1.1 ") || lines[0].hasPrefix("HTTP/1.0 "),
                  let status = Int(lines[0].dropFirst(9).prefix(3)), (100...599).contains(status) else {
                return "bad status line \(lines[0].prefix(80).debugDescription) at \(at)"
            }
            var fields: [(String, String)] = []
            for line in lines.dropFirst() {
                guard let colon = line.firstIndex(of: ":") else { return "a field line without a colon: \(line.prefix(80).debugDescription)" }
                fields.append((line[..<colon].lowercased(), String(line[line.index(after: colon)...].drop { $0 == " " })))
            }
            func field(_ name: String) -> String? { fields.first { $0.0 == name }?.1 }
            let seq = field("x-seq").flatMap { Int($0) }
            var bodyStart = headEnd + 4

            if (100...199).contains(status) {
                if status == 101 {
                    guard let seq, seq == nextSeq, world.request(seq)?.mode == UInt8(ascii: "u") else {
                        return "a 101 for request \(seq.map(String.init) ?? "none") where \(nextSeq) was due"
                    }
                    switched = true
                    at = bodyStart
                    responses += 1
                    return nil
                }
                if status != 100 && status != 103 { return "interim status \(status)" }
                if status == 103 {
                    // Sent only for an `/i` request while its answer is due.
                    guard let request = world.request(nextSeq), request.mode == UInt8(ascii: "i") else {
                        return "a 103 while request \(nextSeq) (not an interim sender) was due"
                    }
                }
                at = bodyStart
                continue
            }

            // The final response: the handler's (x-seq) or the server's own.
            var request: ConnectionFuzzWorld.Request?
            // The server's 502 in place of a switch that cannot happen answers the request due.
            let replacesSwitch = seq == nil && status == 502 && world.request(nextSeq)?.mode == UInt8(ascii: "u")
            if let seq {
                guard seq == nextSeq else { return "answer \(seq) where \(nextSeq) was due" }
                request = world.request(seq)
                guard request != nil else { return "answer \(seq) to a request never dispatched" }
            } else if replacesSwitch {
                request = world.request(nextSeq)
            }
            let noBody = request?.method == "HEAD" || status == 204 || status == 304
            var body: [UInt8] = []
            if noBody {
                // nothing
            } else if field("transfer-encoding")?.lowercased() == "chunked" {
                var cursor = bodyStart
                var done = false
                while !done {
                    guard let lineEnd = firstIndex(of: [13, 10], in: output, from: cursor) else {
                        if output.count - cursor > 64 { return "a chunk-size line longer than 64 bytes" }
                        return nil
                    }
                    guard let size = Int(String(decoding: output[cursor..<lineEnd], as: UTF8.self), radix: 16), size >= 0 else {
                        return "bad chunk size \(String(decoding: output[cursor..<lineEnd], as: UTF8.self).prefix(40).debugDescription)"
                    }
                    cursor = lineEnd + 2
                    if size == 0 {
                        guard cursor + 2 <= output.count else { return nil }
                        guard output[cursor] == 13 && output[cursor + 1] == 10 else { return "no CRLF after the last chunk" }
                        cursor += 2
                        done = true
                    } else {
                        guard cursor + size + 2 <= output.count else {
                            // Incomplete: the chunk's bytes so far must still match.
                            if let seq, request?.mode == UInt8(ascii: "s") {
                                let partial = body + Array(output[cursor..<min(output.count, cursor + size)])
                                if let problem = checkStream(seq: seq, body: partial, complete: false, world: world) { return problem }
                            }
                            return nil
                        }
                        guard output[cursor + size] == 13 && output[cursor + size + 1] == 10 else { return "no CRLF after a chunk" }
                        body += output[cursor..<cursor + size]
                        cursor += size + 2
                    }
                }
                bodyStart = cursor
            } else if let lengthText = field("content-length") {
                guard let length = Int(lengthText), length >= 0 else { return "bad Content-Length \(lengthText)" }
                guard bodyStart + length <= output.count else { return nil }
                body = Array(output[bodyStart..<bodyStart + length])
                bodyStart += length
            } else {
                // Delimited by the end of the connection: only a stream to an HTTP/1.0 client.
                guard let seq, let request, request.mode == UInt8(ascii: "s"), request.version == .http1_0 else {
                    return "a response with neither Content-Length nor chunked framing (status \(status))"
                }
                closeDelimited = (seq, bodyStart)
                at = bodyStart
                responses += 1
                nextSeq += 1
                continue
            }

            if let seq, let request {
                if !noBody, let problem = checkBody(seq: seq, request: request, status: status, body: body, world: world) { return problem }
                nextSeq += 1
            } else {
                // The server's own answer: the 502 that replaces an impossible switch, or an error
                // that ends the connection.
                if replacesSwitch {
                    nextSeq += 1
                } else {
                    guard status >= 400 else { return "a server-made status \(status)" }
                    guard field("connection")?.lowercased() == "close" else { return "server error \(status) without Connection: close" }
                    ended = "server error \(status)"
                }
            }
            if field("connection")?.lowercased().contains("close") == true { ended = ended ?? "Connection: close" }
            responses += 1
            at = bodyStart
        }
        return nil
    }

    private func checkBody(seq: Int, request: ConnectionFuzzWorld.Request, status: Int, body: [UInt8], world: ConnectionFuzzWorld) -> String? {
        let expected: [UInt8]
        switch request.mode {
        case UInt8(ascii: "f"), UInt8(ascii: "l"), UInt8(ascii: "i"):
            expected = ConnectionFuzzBodies.fixed(seq: seq, size: ConnectionFuzzBodies.size(request.sizeSelector))
        case UInt8(ascii: "h"):
            expected = Array(ConnectionFuzzBodies.file.bytes[ConnectionFuzzBodies.fileRange(request.sizeSelector)])
        case UInt8(ascii: "s"):
            return checkStream(seq: seq, body: body, complete: true, world: world)
        case UInt8(ascii: "b"):
            return body.starts(with: Array("read ".utf8)) ? nil : "a body reader's answer \(String(decoding: body.prefix(40), as: UTF8.self).debugDescription)"
        case UInt8(ascii: "u"):
            return "answer \(seq) to an upgrade with status \(status)"
        default:
            expected = Array("seq \(seq)".utf8)
        }
        return body == expected ? nil : "answer \(seq) (mode \(UnicodeScalar(request.mode))): \(body.count) body bytes, \(expected.count) expected\(body.count == expected.count ? ", contents differ" : "")"
    }

    /// A streamed body is the chunks written, in order: all of them when the body ended properly,
    /// a prefix when it was cut.
    private func checkStream(seq: Int, body: [UInt8], complete: Bool, world: ConnectionFuzzWorld) -> String? {
        let written = (world.streamChunks(seq) ?? []).flatMap { $0 }
        if complete {
            return body == written ? nil : "stream \(seq) ended with \(body.count) bytes of the \(written.count) written\(body.count == written.count ? ", contents differ" : "")"
        }
        return written.starts(with: body) ? nil : "stream \(seq): \(body.count) bytes on the wire are not a prefix of the \(written.count) written"
    }
}

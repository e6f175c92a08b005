// libFuzzer entry point for RequestParser. Built by `make fuzz` together with the parser's sources
// (RequestParser.swift, ParsedRequest.swift, HTTPParseError.swift) using
// `swiftc -sanitize=fuzzer,address`.
//
// Input layout: byte 0 chooses where the input is split into two reads and byte 1 picks tight or
// default limits; the rest is the byte stream a client sends. Every request found is inspected
// (method, target, fields, body), so crashes in the accessors count too. Invariants checked:
// consumed <= offered, progress when a request is returned, body within the limit; with bodies
// streamed (flag bits), heads and parts in place.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzRequestParser(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size >= 2 else { return 0 }
    let input = Array(UnsafeBufferPointer(start: data + 2, count: size - 2))
    var limits = RequestParserLimits()
    if data[1] & 1 == 1 {
        limits.maxRequestLineBytes = 32
        limits.maxHeaderBytes = 96
        limits.maxHeaderCount = 4
        limits.maxBodyBytes = 16
        limits.maxChunkLineBytes = 12
    }
    let cut = input.isEmpty ? 0 : Int(data[0]) % (input.count + 1)
    var parser = RequestParser(limits: limits)
    // Bit 1: heads with bodies are reported first (pausesAtBodies); bit 2: their bodies are streamed.
    parser.pausesAtBodies = data[1] & 2 != 0
    let streams = data[1] & 4 != 0
    var pending: [UInt8] = []
    for piece in [input[0..<cut], input[cut...]] {
        pending += piece
        while !pending.isEmpty || parser.hasPendingOutput {
            let result: (consumed: Int, output: RequestParser.Output)
            do {
                result = try pending.withUnsafeBytes { try parser.parse($0) }
            } catch {
                let status = (error as? HTTPParseError)?.status ?? 0
                precondition([400, 413, 414, 417, 431, 501, 505].contains(status), "unexpected status \(status)")
                return 0
            }
            precondition(result.consumed >= 0 && result.consumed <= pending.count, "consumed out of range")
            switch result.output {
            case .head(let head):
                precondition(parser.pausesAtBodies && result.consumed > 0, "head without pausing or progress")
                _ = head.method.utf8.count + head.target.utf8.count
                do { try parser.continueBody(streaming: streams) } catch {
                    precondition(error.status == 413, "continueBody: unexpected error")
                    return 0
                }
                pending.removeFirst(result.consumed)
                continue
            case .bodyPart(let range):
                precondition(streams && !range.isEmpty && range.upperBound == result.consumed, "body part out of place")
                pending.removeFirst(result.consumed)
                continue
            case .bodyEnd:
                precondition(streams, "body end without streaming")
                pending.removeFirst(result.consumed)
                continue
            default:
                break
            }
            pending.removeFirst(result.consumed)
            guard case .request(let request) = result.output else { break }
            precondition(result.consumed > 0, "request without progress")
            precondition(request.body.count <= limits.maxBodyBytes, "body over limit")
            _ = request.method.utf8.count + request.target.utf8.count
            for i in 0..<request.fieldCount { _ = request.fieldName(at: i); _ = request.fieldValue(at: i) }
            _ = request.keepAlive
        }
    }
    return 0
}

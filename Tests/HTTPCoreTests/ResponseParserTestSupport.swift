@testable import HTTPCore

/// One response as the tests see it: the interim heads, the final head, the body bytes (joined from
/// the `.body` events) and the trailers.
struct ParsedTestResponse: Equatable {
    var informational: [Int] = []
    var status = 0
    var reason = ""
    var version = HTTPVersion.http1_1
    var fields: [String] = []
    var bodyLength = HTTPBodyLength.none
    var keepAlive = false
    var body: [UInt8] = []
    var trailers: [String] = []
    var bodyEvents = 0
}

struct ParseOutcome {
    var responses: [ParsedTestResponse] = []
    var error: ResponseParseError?
    /// Bytes left unconsumed after the last complete response.
    var leftover = 0
}

/// Feeds `input` to one parser in pieces (as a connection would: unconsumed bytes are kept and
/// re-offered with the next piece). `heads[i]` says whether request i was HEAD (missing: not HEAD).
/// With `eof`, the end of the input is reported with `endOfInput()`. Checks the event contract on the
/// way: `consumed` within the buffer, body ranges inside `0..<consumed` and non-empty.
func parseResponses(_ input: [UInt8], splitAt cuts: [Int] = [], heads: [Bool] = [], eof: Bool = true,
                    limits: ResponseParserLimits = ResponseParserLimits()) -> ParseOutcome {
    var parser = ResponseParser(limits: limits)
    var outcome = ParseOutcome()
    var current = ParsedTestResponse()
    parser.expectResponse(toHEAD: heads.first ?? false)
    var pending: [UInt8] = []
    var boundaries = cuts.filter { $0 > 0 && $0 < input.count }.sorted()
    boundaries.append(input.count)
    var previous = 0

    func handle(_ event: ResponseParser.Event, _ buffer: [UInt8]) {
        switch event {
        case .needMoreData:
            break
        case .informational(let head):
            current.informational.append(head.status)
        case .head(let head):
            current.status = head.status
            current.reason = head.reason
            current.version = head.version
            current.fields = head.fields.map { "\($0.name): \($0.value)" }
            current.bodyLength = head.bodyLength
            current.keepAlive = head.keepAlive
        case .body(let range):
            precondition(!range.isEmpty, "empty body event")
            current.body += buffer[range]
            current.bodyEvents += 1
        case .end(let trailers):
            current.trailers = trailers.map { "\($0.name): \($0.value)" }
            outcome.responses.append(current)
            current = ParsedTestResponse()
            parser.expectResponse(toHEAD: outcome.responses.count < heads.count ? heads[outcome.responses.count] : false)
        }
    }

    for cut in boundaries {
        pending += input[previous..<cut]
        previous = cut
        while true {
            let result: (consumed: Int, event: ResponseParser.Event)
            do {
                result = try pending.withUnsafeBytes { try parser.parse($0) }
            } catch {
                outcome.error = error as? ResponseParseError
                return outcome
            }
            precondition(result.consumed >= 0 && result.consumed <= pending.count, "consumed out of range")
            if case .body(let range) = result.event { precondition(range.upperBound == result.consumed) }
            let buffer = pending
            pending.removeFirst(result.consumed)
            if case .needMoreData = result.event { break }
            handle(result.event, buffer)
        }
    }
    outcome.leftover = pending.count
    if eof && pending.isEmpty {
        do {
            let event = try parser.endOfInput()
            handle(event, [])
        } catch {
            // A fresh, untouched parser at EOF is a clean end of the stream, not an error.
            if !(parser.hasNotStarted && !outcome.responses.isEmpty) { outcome.error = error }
        }
    } else if eof {
        do { _ = try parser.endOfInput() } catch { outcome.error = error }
    }
    return outcome
}

func parseResponses(_ text: String, splitAt cuts: [Int] = [], heads: [Bool] = [], eof: Bool = true,
                    limits: ResponseParserLimits = ResponseParserLimits()) -> ParseOutcome {
    parseResponses(Array(text.utf8), splitAt: cuts, heads: heads, eof: eof, limits: limits)
}

/// The error kind a response stream is rejected with, or nil when it parses.
func rejection(_ text: String, heads: [Bool] = [], limits: ResponseParserLimits = ResponseParserLimits()) -> ResponseParseError.Kind? {
    parseResponses(text, heads: heads, limits: limits).error?.kind
}

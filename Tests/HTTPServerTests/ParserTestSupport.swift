@testable import HTTPServer

/// Feeds `input` to a parser in pieces (as a connection would: unconsumed bytes are kept and
/// re-offered with the next piece) and returns the requests, or the error thrown.
func parseAll(_ input: [UInt8], splitAt cuts: [Int] = [], limits: RequestParserLimits = RequestParserLimits())
    -> (requests: [ParsedRequest], error: HTTPParseError?, sawContinue: Bool) {
    var parser = RequestParser(limits: limits)
    var pending: [UInt8] = []
    var requests: [ParsedRequest] = []
    var sawContinue = false
    var boundaries = cuts.filter { $0 > 0 && $0 < input.count }.sorted()
    boundaries.append(input.count)
    var previous = 0
    for cut in boundaries {
        pending += input[previous..<cut]
        previous = cut
        while true {
            let result: (consumed: Int, output: RequestParser.Output)
            do {
                result = try pending.withUnsafeBytes { b in try parser.parse(b) }
            } catch {
                return (requests, error as? HTTPParseError, sawContinue)
            }
            pending.removeFirst(result.consumed)
            if parser.awaitingContinue { sawContinue = true }
            guard case .request(let r) = result.output else { break }
            requests.append(r)
        }
    }
    return (requests, nil, sawContinue)
}

func parseAll(_ text: String, splitAt cuts: [Int] = [], limits: RequestParserLimits = RequestParserLimits())
    -> (requests: [ParsedRequest], error: HTTPParseError?, sawContinue: Bool) {
    parseAll(Array(text.utf8), splitAt: cuts, limits: limits)
}

/// The status a request text is rejected with, or nil when it parses.
func rejection(_ text: String, limits: RequestParserLimits = RequestParserLimits()) -> Int? {
    parseAll(text, limits: limits).error?.status
}

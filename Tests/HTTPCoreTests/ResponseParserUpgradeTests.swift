import Testing
@testable import HTTPCore

/// `101 Switching Protocols` to a request that asked for an upgrade: the final head, and the end of
/// HTTP on the connection (what follows belongs to the new protocol).
@Suite struct ResponseParserUpgradeTests {
    @Test func switchingProtocolsEndsParsingWhenAnUpgradeWasRequested() throws {
        let head = Array("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n".utf8)
        let input = head + [0x81, 0x05] + Array("hello".utf8)
        var parser = ResponseParser()
        parser.expectResponse(toHEAD: false, upgradeRequested: true)
        let step = try input.withUnsafeBytes { try parser.parse($0) }
        guard case .head(let parsed) = step.event else { Issue.record("expected the 101 as the final head"); return }
        #expect(parsed.status == 101 && parsed.bodyLength == .none)
        #expect(parsed.values(of: "upgrade") == ["websocket"])
        #expect(step.consumed == head.count)  // the frame after the head is left to the caller
        #expect(parser.isComplete)
        let rest = Array(input[step.consumed...])
        let next = try rest.withUnsafeBytes { try parser.parse($0) }
        #expect(next.consumed == 0)
        if case .needMoreData = next.event {} else { Issue.record("nothing is parsed after the switch") }
    }

    @Test func interimResponsesBeforeTheSwitchStayInterim() throws {
        let input = Array("HTTP/1.1 103 Early Hints\r\nLink: </a.css>\r\n\r\nHTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n".utf8)
        var parser = ResponseParser()
        parser.expectResponse(toHEAD: false, upgradeRequested: true)
        let first = try input.withUnsafeBytes { try parser.parse($0) }
        guard case .informational(let hints) = first.event else { Issue.record("expected 103 first"); return }
        #expect(hints.status == 103)
        let rest = Array(input[first.consumed...])
        let second = try rest.withUnsafeBytes { try parser.parse($0) }
        guard case .head(let parsed) = second.event else { Issue.record("expected the 101"); return }
        #expect(parsed.status == 101)
    }

    @Test func anOrdinaryAnswerToAnUpgradeRequestIsAnOrdinaryResponse() {
        var parser = ResponseParser()
        parser.expectResponse(toHEAD: false, upgradeRequested: true)
        let input = Array("HTTP/1.1 403 Forbidden\r\nContent-Length: 2\r\n\r\nno".utf8)
        let step = try? input.withUnsafeBytes { try parser.parse($0) }
        guard case .head(let parsed)? = step?.event else { Issue.record("expected the 403"); return }
        #expect(parsed.status == 403 && parsed.bodyLength == .known(2))
        #expect(!parser.isComplete)
    }
}

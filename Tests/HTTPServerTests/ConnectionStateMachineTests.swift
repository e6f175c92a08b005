import Testing
@testable import HTTPServer

/// Every transition of a server connection that matters, without sockets.
@Suite("ConnectionStateMachine: keep-alive, framing, pipelining, back-pressure, deadlines, closing")
struct ConnectionStateMachineTests {
    typealias M = ConnectionStateMachine

    /// A machine that has parsed one request and holds it with the handler.
    func handling(keepAlive: Bool = true, version: HTTPVersion = .http1_1, isHead: Bool = false, max: Int = 100) -> M {
        var m = M(maxRequestsPerConnection: max)
        m.requestParsed(keepAlive: keepAlive, version: version, isHead: isHead)
        return m
    }

    @Test func keepAliveServesTheNextRequest() {
        var m = handling()
        #expect(m.phase == .handling && !m.mayParse && !m.mayRead)
        #expect(m.responseReady(status: 200, knownLength: 5) == .init(framing: .contentLength(5), keepAlive: true, sendsBody: true))
        #expect(m.responseQueued() == .parseNext)
        #expect(m.phase == .reading && m.mayParse && m.mayRead)
        #expect(m.outputWritten(unreadInput: false) == .none)
    }

    @Test func onlyAnHTTP11RequestBeingHandledWithoutAStreamedBodyMaySwitchProtocols() {
        #expect(handling().maySwitchProtocols)
        #expect(!handling(version: .http1_0).maySwitchProtocols)
        var streamed = handling()
        streamed.requestBodyStreamStarted()
        #expect(!streamed.maySwitchProtocols)
        var answered = handling()
        _ = answered.responseReady(status: 200, knownLength: 0)
        _ = answered.responseQueued()
        #expect(!answered.maySwitchProtocols)  // the request was answered: the connection reads again
    }

    @Test func closeRequestedByTheClientEndsAfterTheResponse() {
        var m = handling(keepAlive: false)
        #expect(m.responseReady(status: 200, knownLength: 0)?.keepAlive == false)
        #expect(m.responseQueued() == .finishAndClose)
        #expect(m.phase == .closing && !m.mayRead && !m.mayParse && !m.discardsInput)
        #expect(m.outputWritten(unreadInput: false) == .close)
    }

    @Test func closeWithMorePipelinedInputLingers() {
        var m = handling(keepAlive: false)
        _ = m.responseReady(status: 200, knownLength: 0)
        _ = m.responseQueued()
        #expect(m.outputWritten(unreadInput: true) == .halfCloseAndLinger)
        #expect(m.phase == .lingering && m.mayRead && !m.mayParse)
        #expect(m.peerClosed() == .close)
    }

    @Test func maxRequestsPerConnectionClosesTheLast() {
        var m = M(maxRequestsPerConnection: 2)
        m.requestParsed(keepAlive: true, version: .http1_1, isHead: false)
        #expect(m.responseReady(status: 200, knownLength: 1)?.keepAlive == true)
        #expect(m.responseQueued() == .parseNext)
        m.requestParsed(keepAlive: true, version: .http1_1, isHead: false)
        #expect(m.requestsServed == 2)
        #expect(m.responseReady(status: 200, knownLength: 1)?.keepAlive == false)
        #expect(m.responseQueued() == .finishAndClose)
    }

    @Test func pipelinedRequestsWaitForTheResponseInOrder() {
        var m = handling()
        // While the first request is handled, nothing more is parsed (responses stay in order).
        #expect(!m.mayParse)
        #expect(m.peerClosed() == .none)  // the client's FIN behind its requests: finish first
        _ = m.responseReady(status: 200, knownLength: 1)
        #expect(m.responseQueued() == .parseNext)
        #expect(m.mayParse && !m.mayRead)  // parse what is buffered, read no more
        m.requestParsed(keepAlive: true, version: .http1_1, isHead: false)
        _ = m.responseReady(status: 200, knownLength: 1)
        #expect(m.responseQueued() == .parseNext)
        #expect(m.inputExhausted() == .finishAndClose)  // all answered, the client sent all it will
        #expect(m.outputWritten(unreadInput: false) == .close)  // no linger: the peer closed already
    }

    @Test func endOfStreamWhileIdleCloses() {
        var m = M(maxRequestsPerConnection: 10)
        #expect(m.inputExhausted() == .none)
        #expect(m.peerClosed() == .parseNext)
        #expect(m.inputExhausted() == .finishAndClose)
        #expect(m.outputWritten(unreadInput: false) == .close)
    }

    @Test func headKeepsTheFramingButSendsNoBody() {
        var m = handling(isHead: true)
        #expect(m.responseReady(status: 200, knownLength: 1234) == .init(framing: .contentLength(1234), keepAlive: true, sendsBody: false))
        var s = handling(isHead: true)
        #expect(s.responseReady(status: 200, knownLength: nil) == .init(framing: .chunked, keepAlive: true, sendsBody: false))
    }

    @Test func headAnnouncingNoLengthHasNoFramingAndKeepsTheConnection() {
        var m = handling(isHead: true)
        #expect(m.responseReady(status: 200, knownLength: nil, headLengthUnannounced: true)
                == .init(framing: .none, keepAlive: true, sendsBody: false))
        // HTTP/1.0 too: no close-delimited framing, which would end the connection.
        var old = handling(version: .http1_0, isHead: true)
        #expect(old.responseReady(status: 200, knownLength: nil, headLengthUnannounced: true)
                == .init(framing: .none, keepAlive: true, sendsBody: false))
        // Ignored for any other method.
        var get = handling()
        #expect(get.responseReady(status: 200, knownLength: 5, headLengthUnannounced: true)
                == .init(framing: .contentLength(5), keepAlive: true, sendsBody: true))
    }

    @Test(arguments: [100, 101, 103, 204, 304])
    func statusesWithoutBodyHaveNoFraming(status: Int) {
        var m = handling()
        #expect(m.responseReady(status: status, knownLength: 10) == .init(framing: .none, keepAlive: true, sendsBody: false))
    }

    @Test func streamsAreChunkedOnHTTP11AndCloseDelimitedOnHTTP10() {
        var m = handling()
        #expect(m.responseReady(status: 200, knownLength: nil) == .init(framing: .chunked, keepAlive: true, sendsBody: true))
        m.bodyPending()
        #expect(m.phase == .sendingBody && !m.mayParse)
        #expect(m.responseQueued() == .parseNext)
        var old = handling(version: .http1_0)
        #expect(old.responseReady(status: 200, knownLength: nil) == .init(framing: .closeDelimited, keepAlive: false, sendsBody: true))
        #expect(old.responseQueued() == .finishAndClose)
    }

    @Test func aSecondResponseOrALateOneIsIgnored() {
        var m = handling()
        _ = m.responseReady(status: 200, knownLength: 0)
        _ = m.responseQueued()
        #expect(m.responseReady(status: 500, knownLength: 0) == nil)
        var c = handling()
        c.closed()
        #expect(c.responseReady(status: 200, knownLength: 0) == nil)
        #expect(c.responseQueued() == .none)
    }

    @Test func backPressurePausesParsingAndReadingUntilOutputDrains() {
        var m = M(maxRequestsPerConnection: 100)
        m.outputBackedUp()
        #expect(m.pausedForOutput && !m.mayParse && !m.mayRead)
        #expect(m.inputExhausted() == .none)
        #expect(m.outputWritten(unreadInput: true) == .parseNext)
        #expect(!m.pausedForOutput && m.mayParse && m.mayRead)
        var busy = handling()
        busy.outputBackedUp()  // only a reading connection pauses; a handled one is paused anyway
        #expect(!busy.pausedForOutput)
    }

    @Test func parseErrorsAnswerThenLingerOverTheUnreadInput() {
        var m = M(maxRequestsPerConnection: 100)
        #expect(m.parseFailed(status: 413) == .respondWithErrorAndClose(status: 413))
        // Input is read and discarded while the earlier responses and the error are written.
        #expect(m.phase == .closing && m.mayRead && m.discardsInput && !m.mayParse)
        #expect(m.outputWritten(unreadInput: false) == .halfCloseAndLinger)
        #expect(m.mayRead && m.discardsInput)
        #expect(m.lingerLimitReached() == .close)
        var sending = M(maxRequestsPerConnection: 100)
        _ = sending.parseFailed(status: 431)
        #expect(sending.peerClosed() == .none)  // the client finished sending: write on, then close
        #expect(!sending.mayRead)
        #expect(sending.outputWritten(unreadInput: false) == .close)
        var done = M(maxRequestsPerConnection: 100)
        _ = done.peerClosed()
        _ = done.parseFailed(status: 400)
        #expect(done.outputWritten(unreadInput: false) == .close)  // nothing more can come: no linger
    }

    @Test func readDeadlines() {
        #expect(M.readDeadline(bufferEmpty: true, betweenRequests: true, readingBody: false) == .idle)
        #expect(M.readDeadline(bufferEmpty: false, betweenRequests: false, readingBody: false) == .header)
        #expect(M.readDeadline(bufferEmpty: true, betweenRequests: false, readingBody: false) == .header)
        #expect(M.readDeadline(bufferEmpty: true, betweenRequests: false, readingBody: true) == .body)
    }

    @Test func slowRequestsGet408AndIdleOnesCloseSilently() {
        for kind in [M.DeadlineKind.header, .body] {
            var m = M(maxRequestsPerConnection: 100)
            #expect(m.deadlinePassed(kind) == .respondWithErrorAndClose(status: 408))
            #expect(m.outputWritten(unreadInput: false) == .halfCloseAndLinger)
        }
        for kind in [M.DeadlineKind.idle, .write, .handshake, .linger] {
            var m = M(maxRequestsPerConnection: 100)
            #expect(m.deadlinePassed(kind) == .close)
        }
        var none = M(maxRequestsPerConnection: 100)
        #expect(none.deadlinePassed(.none) == .none)
    }

    @Test func shutdownClosesIdleConnectionsAndEndsBusyOnesAfterTheirResponse() {
        var idle = M(maxRequestsPerConnection: 100)
        #expect(idle.shutdownRequested(idle: true) == .close)
        var partial = M(maxRequestsPerConnection: 100)
        #expect(partial.shutdownRequested(idle: false) == .none)  // half a request buffered: finish it
        partial.requestParsed(keepAlive: true, version: .http1_1, isHead: false)
        #expect(partial.responseReady(status: 200, knownLength: 0)?.keepAlive == false)
        var busy = handling()
        #expect(busy.shutdownRequested(idle: true) == .none)
        #expect(busy.responseReady(status: 200, knownLength: 0)?.keepAlive == false)
        #expect(busy.responseQueued() == .finishAndClose)
        #expect(busy.outputWritten(unreadInput: false) == .close)
    }
}

@Suite("ConnectionStateMachine: streamed request bodies")
struct ConnectionStateMachineStreamingTests {
    typealias M = ConnectionStateMachine

    @Test func readsOnlyWhileTheHandlerWantsAPart() {
        var m = M(maxRequestsPerConnection: 100)
        m.requestParsed(keepAlive: true, version: .http1_1, isHead: false)
        m.requestBodyStreamStarted()
        #expect(!m.mayRead && !m.mayParse)  // back-pressure: nothing until the handler reads
        m.bodyReadRequested()
        #expect(m.mayRead && m.mayParse && m.readingStreamedBody)
        m.bodyPartDelivered()
        #expect(!m.mayRead && !m.mayParse)
        m.bodyReadRequested()
        m.requestBodyEnded()
        #expect(!m.mayRead && !m.streamingRequestBody)
        #expect(m.responseReady(status: 200, knownLength: 0)?.keepAlive == true)
        #expect(m.responseQueued() == .parseNext)
    }

    @Test func answeringBeforeTheBodyEndedClosesAfterTheResponse() {
        var m = M(maxRequestsPerConnection: 100)
        m.requestParsed(keepAlive: true, version: .http1_1, isHead: false)
        m.requestBodyStreamStarted()
        #expect(m.responseReady(status: 413, knownLength: 5)?.keepAlive == false)
        m.requestBodyEnded()
        #expect(m.responseQueued() == .finishAndClose)
        #expect(m.discardsInput && m.mayRead)  // the rest of the body is read and dropped meanwhile
        #expect(m.outputWritten(unreadInput: false) == .halfCloseAndLinger)
    }

    @Test func framingErrorsInAStreamedBodyAreAnsweredUnlessTheResponseBegan() {
        var bad = M(maxRequestsPerConnection: 100)
        bad.requestParsed(keepAlive: true, version: .http1_1, isHead: false)
        bad.requestBodyStreamStarted()
        bad.bodyReadRequested()
        #expect(bad.parseFailed(status: 400) == .respondWithErrorAndClose(status: 400))
        #expect(!bad.streamingRequestBody && bad.discardsInput)
        #expect(bad.responseReady(status: 502, knownLength: 3) == nil)  // the handler's late answer is dropped
        var begun = M(maxRequestsPerConnection: 100)
        begun.requestParsed(keepAlive: true, version: .http1_1, isHead: false)
        begun.requestBodyStreamStarted()
        _ = begun.responseReady(status: 200, knownLength: nil)
        begun.bodyPending()
        #expect(begun.parseFailed(status: 400) == .close)
    }

    @Test func stallsInAStreamedBodyClose() {
        var slow = M(maxRequestsPerConnection: 100)
        slow.requestParsed(keepAlive: true, version: .http1_1, isHead: false)
        slow.requestBodyStreamStarted()
        slow.bodyReadRequested()
        #expect(slow.deadlinePassed(.body) == .close)
        #expect(!slow.streamingRequestBody)
    }
}

import Dispatch
import HTTPServer
import Testing
import Locking

/// Calls `start` with a `respond` closure and returns the response given to it, waiting up to
/// `seconds`: a handler may answer on another queue (large bodies, a dictionary read from the store).
/// No response in time is a test failure.
func awaitedResponse(seconds: Double = 60,
                     _ start: (@escaping @Sendable (consuming HTTPServerResponse) -> Void) -> Void) throws -> HTTPServerResponse {
    let box = Locked<HTTPServerResponse?>(nil)
    let done = DispatchSemaphore(value: 0)
    start { response in
        box.withLock { $0 = response }
        done.signal()
    }
    #expect(done.wait(timeout: .now() + seconds) == .success, "no response within \(seconds) s")
    return try #require(box.withLock { $0 })
}

import Dispatch
import HTTPClient
import HTTPCore
import HTTPTypes
import Synchronization
import Locking

/// Records one exchange's callbacks. By default resumes every body part at once; with
/// `holdResume`, keeps the resume closures until `resumeAll()` (back-pressure tests).
/// `onBodyPart` runs for each part (e.g. to cancel). `wait` blocks until the exchange ended.
final class CollectingDelegate: HTTPClientResponseDelegate, @unchecked Sendable {
    struct Record {
        var informational: [Int] = []
        var head: HTTPResponse?
        var bodyLength: HTTPBodyLength?
        var body: [UInt8] = []
        var bodyParts = 0
        var trailers: HTTPFields?
        var finished = false
        var error: HTTPClientError?
        var callbacksAfterEnd = 0
        var held: [@Sendable () -> Void] = []
    }

    let record = Locked(Record())
    private let done = DispatchSemaphore(value: 0)
    private let holding: Atomic<Bool>
    let onBodyPart: (@Sendable (Int) -> Void)?

    init(holdResume: Bool = false, onBodyPart: (@Sendable (Int) -> Void)? = nil) {
        holding = Atomic(holdResume)
        self.onBodyPart = onBodyPart
    }

    func didReceiveInformational(_ head: HTTPResponse) {
        record.withLock { $0.informational.append(head.status.code) }
    }

    func didReceiveHead(_ head: HTTPResponse, bodyLength: HTTPBodyLength) {
        record.withLock { r in
            if r.finished || r.error != nil { r.callbacksAfterEnd += 1 }
            r.head = head
            r.bodyLength = bodyLength
        }
    }

    func didReceiveBodyPart(_ bytes: ArraySlice<UInt8>, resume: @escaping @Sendable () -> Void) {
        let hold = holding.load(ordering: .relaxed)
        let count = record.withLock { r in
            r.body += bytes
            r.bodyParts += 1
            if hold { r.held.append(resume) }
            return r.bodyParts
        }
        onBodyPart?(count)
        if !hold { resume() }
    }

    func didFinish(trailers: HTTPFields?) {
        record.withLock { r in
            if r.finished || r.error != nil { r.callbacksAfterEnd += 1 }
            r.finished = true
            r.trailers = trailers
        }
        done.signal()
    }

    func didFail(_ error: HTTPClientError) {
        record.withLock { r in
            if r.finished || r.error != nil { r.callbacksAfterEnd += 1 }
            r.error = error
        }
        done.signal()
    }

    /// Waits (bounded) for the end of the exchange; false when it did not end in time.
    func wait(seconds: Double = 20) -> Bool {
        done.wait(timeout: .now() + seconds) == .success
    }

    /// Stops holding: resumes what is held, and every later part at once.
    func stopHolding() {
        holding.store(false, ordering: .relaxed)
        resumeHeld()
    }

    /// Calls every held resume closure.
    func resumeHeld() {
        let held = record.withLock { r in
            let h = r.held
            r.held = []
            return h
        }
        for resume in held { resume() }
    }

    var snapshot: Record { record.withLock { $0 } }
}

/// A request body source that hands out `parts` one pull at a time.
final class PartsSource: RequestBodySource, @unchecked Sendable {
    private let parts: Locked<[[UInt8]]>
    let pulls = Atomic<Int>(0)

    init(_ parts: [[UInt8]]) { self.parts = Locked(parts) }

    func pull(_ deliver: @escaping @Sendable (RequestBodyPart) -> Void) {
        pulls.add(1, ordering: .relaxed)
        let next: [UInt8]? = parts.withLock { $0.isEmpty ? nil : $0.removeFirst() }
        DispatchQueue.global().async { deliver(next.map { .bytes($0) } ?? .end) }
    }
}

/// Like `PartsSource`, but never answers the pull after its last part (its `.end` never comes):
/// a sized body must count as sent without it.
final class EndlessTailSource: RequestBodySource, @unchecked Sendable {
    private let parts: Locked<[[UInt8]]>
    let pulls = Atomic<Int>(0)

    init(_ parts: [[UInt8]]) { self.parts = Locked(parts) }

    func pull(_ deliver: @escaping @Sendable (RequestBodyPart) -> Void) {
        pulls.add(1, ordering: .relaxed)
        guard let next = parts.withLock({ $0.isEmpty ? nil : $0.removeFirst() }) else { return }
        DispatchQueue.global().async { deliver(.bytes(next)) }
    }
}

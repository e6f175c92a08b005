import DictionaryClient
import DictionaryTransportFields
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
import Locking
#endif

/// A `URLProtocol` that routes http(s) requests through a ``DictionaryURLSession``, for code that
/// only takes a `URLSessionConfiguration`: list it first in `protocolClasses`
/// (``configuration(base:)`` does) and every data task of that session gets dictionary compression.
///
/// Install the session once (``install(_:)``) before the first request; without one the protocol
/// declines every request and URLSession's own protocols handle it. Foreground sessions only (a
/// background `URLSessionConfiguration` ignores custom protocols). Redirects are delivered as the
/// server sent them (the transport follows none). The outer session's own cache is not used
/// (`cacheStoragePolicy` `.notAllowed`): a dictionary-coded response is valid only with its dictionary.
///
/// Thread-safety: the installed session is read under a lock; each instance's task handle too. The
/// URL loading system's client is called on the thread that started loading (Apple platforms: its run
/// loop; Linux: FoundationNetworking's client hops to the session's queue itself).
public final class DictionaryURLProtocol: URLProtocol {
    private static let installed = Locked<DictionaryURLSession?>(nil)
    private let loading = Locked<Task<Void, Never>?>(nil)

    /// Routes requests of every session that lists this class through `session` (nil to stop).
    public static func install(_ session: DictionaryURLSession?) {
        installed.withLock { $0 = session }
    }

    /// `base` (default: `.default`) with this protocol first in `protocolClasses`.
    public static func configuration(base: URLSessionConfiguration = .default) -> URLSessionConfiguration {
        let configuration = base
        configuration.protocolClasses = [DictionaryURLProtocol.self] + (configuration.protocolClasses ?? [])
        return configuration
    }

    public override class func canInit(with request: URLRequest) -> Bool {
        guard let scheme = request.url?.scheme?.lowercased(), scheme == "http" || scheme == "https" else { return false }
        return installed.withLock { $0 != nil }
    }

    public override class func canonicalRequest(for request: URLRequest) -> URLRequest { request }

    public override func startLoading() {
        guard let session = Self.installed.withLock({ $0 }) else {
            client?.urlProtocol(self, didFailWithError: URLError(.cancelled))
            return
        }
        let request = self.request
        let this = Unchecked(self)
        let deliver = ClientThread()
        let task = Task {
            do {
                let (data, response, _) = try await session.dataAndMeasurement(for: request)
                guard !Task.isCancelled else { return }
                deliver.run {
                    let p = this.value
                    p.client?.urlProtocol(p, didReceive: response, cacheStoragePolicy: .notAllowed)
                    p.client?.urlProtocol(p, didLoad: data)
                    p.client?.urlProtocolDidFinishLoading(p)
                }
            } catch {
                guard !Task.isCancelled else { return }
                deliver.run { this.value.client?.urlProtocol(this.value, didFailWithError: error) }
            }
        }
        loading.withLock { $0 = task }
    }

    public override func stopLoading() {
        loading.withLock { $0?.cancel(); $0 = nil }
    }
}

/// A value moved across the concurrency boundary by hand: the URL loading system owns the protocol
/// instance and serialises its calls; the task only reads `client` and calls it on ``ClientThread``.
private struct Unchecked<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}

/// Runs blocks on the thread that created it: the run loop of `startLoading`'s thread on Apple
/// platforms (where the URL loading system expects its client called), directly elsewhere.
private struct ClientThread: @unchecked Sendable {
    #if canImport(Darwin)
    private let runLoop = CFRunLoopGetCurrent()
    func run(_ block: @escaping () -> Void) {
        CFRunLoopPerformBlock(runLoop, CFRunLoopMode.commonModes.rawValue, block)
        CFRunLoopWakeUp(runLoop)
    }
    #else
    func run(_ block: () -> Void) { block() }
    #endif
}

import Foundation

/// One response as the compression middleware saw it leave: request line, final status (after
/// conditional evaluation, e.g. 304) and the decision. Reported to ``CompressionObserver/responded(_:)``
/// for metrics and the live view. `path` is without the query (queries may carry tokens). A value type.
public struct ResponseRecord: Sendable {
    public var method: String
    public var path: String
    public var status: Int
    public var decision: ResponseDecision
    /// Wall-clock time the response was handed to the server: set by the observer that keeps the
    /// record (the live view), so no clock is read for a record nothing keeps.
    public var date: Date?

    public init(method: String, path: String, status: Int, decision: ResponseDecision, date: Date? = nil) {
        self.method = method
        self.path = path
        self.status = status
        self.decision = decision
        self.date = date
    }
}

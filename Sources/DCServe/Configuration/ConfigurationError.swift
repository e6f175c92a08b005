/// A configuration that dcserve refuses to start with: names the key and says why.
public struct ConfigurationError: Error, CustomStringConvertible, Equatable {
    public let key: String
    public let reason: String

    public init(key: String, _ reason: String) {
        self.key = key
        self.reason = reason
    }

    public var description: String { "invalid configuration: \(key): \(reason)" }
}

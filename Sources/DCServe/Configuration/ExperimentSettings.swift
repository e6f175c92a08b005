/// The A/B switch (`experiment.*`): a stable share of clients, the control group, gets no dictionary
/// transport at all; every response names its group in a field. A plain value; validated by
/// `DCServeConfiguration.validate()`.
public struct ExperimentSettings: Sendable, Equatable {
    /// What identifies a client.
    public enum Key: Sendable, Equatable {
        /// The value the partitioned rules key on (their header or cookie); requires such a rule.
        case partition
        /// A request header carrying a client id (`{"header": NAME}`).
        case header(String)
        /// A request cookie carrying a client id (`{"cookie": NAME}`).
        case cookie(String)
    }

    /// Share of keyed clients in the control group, 0…1.
    public var controlShare: Double = 0
    /// nil: no experiment (no group field, no group metrics).
    public var key: Key?
    /// The response field naming the group (`control` or `dictionary`).
    public var groupHeader = "DCServe-Group"

    public init() {}

    public var isEnabled: Bool { key != nil }
}

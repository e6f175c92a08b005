/// The partition one exchange belongs to, worked out once by the compression middleware from the
/// rule covering its path, the request and the upstream's head. A value type, `Sendable`.
struct ExchangePartition: Sendable, Equatable {
    /// The store partition id: "" for a shared rule (or none), else a user's id or the anonymous one.
    var id: String
    /// Why dictionary transport is off for this exchange: an ambiguous key, or a credentialed or
    /// private exchange in the anonymous partition. Nothing is then advertised, stored or delta-coded.
    var refusal: DecisionReason?

    /// A path no partitioned rule covers.
    static let shared = ExchangePartition(id: "", refusal: nil)
}

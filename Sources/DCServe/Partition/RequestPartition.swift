import DictionaryTransport
import HTTPTypes

/// Where one request stands under a partitioned rule, decided once from its key (a request header or
/// cookie, or the upstream's response header). A value type, `Sendable`.
public enum RequestPartition: Hashable, Sendable {
    /// The key names one user: that user's partition.
    case user(PartitionID)
    /// No key (absent or empty): the partition every key-less client shares. It takes only what a
    /// shared rule would (``AnonymousPartitionSafeguard``).
    case anonymous
    /// The key appears more than once (two field lines, a cookie named twice): no partition at all.
    /// Nothing is advertised, stored or delta-coded for the request, since the back end may
    /// authenticate another of the values than the one dcserve would read.
    case ambiguous

    /// The store partition id of a request that may use dictionaries (nil when ambiguous).
    public var storeID: String? {
        switch self {
        case .user(let id): id.value
        case .anonymous: PartitionID.anonymous.value
        case .ambiguous: nil
        }
    }
}

import DictionaryTransport
import HTTPTypes

/// The anonymous partition of a partitioned rule is shared by every client without a key, so it
/// follows a shared rule's privacy safeguard: an exchange whose request carries credentials other than
/// the partition key itself (`Authorization`, a cookie), or whose response is private (`Cache-Control:
/// private`/`no-store`) or sets a cookie, is neither advertised, stored, collected into a history
/// window, nor delta-coded there — unless the rule explicitly allows private responses
/// (`allowPrivate`). Pure; thread-safe.
public enum AnonymousPartitionSafeguard {
    /// The concern that keeps this anonymous exchange out of dictionary transport, or nil.
    /// `response` is the upstream's head as it came (before dcserve marks partitioned responses private).
    public static func concern(request: HTTPFields, response: HTTPFields,
                               key: DictionaryPartitionSource) -> CompressionEligibility.PrivacyConcern? {
        if let concern = CompressionEligibility.privacyConcern(request: HTTPFields(), response: response) { return concern }
        let keyHeader: String? = if case .header(let name) = key { name.lowercased() } else { nil }
        if request[.authorization] != nil && keyHeader != "authorization" { return .credentialedRequest }
        let cookies = request[values: .cookie]
        if !cookies.isEmpty && keyHeader != "cookie" {
            let keyCookie: String? = if case .cookie(let name) = key { name } else { nil }
            if PartitionID.hasCookie(otherThan: keyCookie, in: cookies) { return .credentialedRequest }
        }
        return nil
    }

    /// The decision reason for `concern`.
    static func reason(_ concern: CompressionEligibility.PrivacyConcern) -> DecisionReason {
        concern == .credentialedRequest ? .credentialedRequest : .privateResponse
    }
}

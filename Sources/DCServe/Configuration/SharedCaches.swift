/// What the caches in front of dcserve (CDNs, load balancers, reverse proxies) do with `Vary`
/// (`server.sharedCaches`).
///
/// Several CDNs key cached responses on the URL and `Accept-Encoding` only: a dcb/dcz response stored
/// there would be served to clients holding another dictionary, or none. Under ``ignoreVary`` (the
/// default) every response whose coding depended on the request's `Available-Dictionary` (every
/// dcb/dcz response, and a plain one chosen while a dictionary was offered) is `Cache-Control: private`:
/// browsers still cache it, shared caches do not.
public enum SharedCaches: String, Sendable, Equatable, CaseIterable {
    /// The caches in front key on every field `Vary` names: responses keep their own Cache-Control.
    case honourVary
    /// Some cache in front may ignore `Vary` (the safe assumption).
    case ignoreVary
}

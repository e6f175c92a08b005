import HTTPCore
import HTTPTypes

/// The RFC 9842 §9.3.3 server gate: may a dictionary-compressed response go to this request?
///
/// Steps (SPEC.md §5): no `Sec-Fetch-Site` → allow; `same-origin` → allow; no `Sec-Fetch-Mode` → allow;
/// mode `navigate` or `same-origin` → allow; mode `cors` → allow only if the response's
/// `Access-Control-Allow-Origin` is `*` or equals the request's `Origin`; otherwise refuse.
/// Repeated `Sec-Fetch-Site`/`Sec-Fetch-Mode`/`Origin`/`Access-Control-Allow-Origin` lines are
/// ambiguous and refuse (fail closed). A shared cache must key on this function's inputs.
/// Pure, thread-safe.
public enum CrossOriginGate {
    /// - Parameters:
    ///   - request: the request's fields.
    ///   - response: the response's fields (only `Access-Control-Allow-Origin` is read).
    public static func allowsDictionaryCompression(request: HTTPFields, response: HTTPFields) -> Bool {
        allowsDictionaryCompression(request: request, accessControlAllowOrigin: SingleFieldValue(.accessControlAllowOrigin, in: response))
    }

    /// The same gate with the response's `Access-Control-Allow-Origin` given directly (nil = absent).
    public static func allowsDictionaryCompression(request: HTTPFields, accessControlAllowOrigin: String?) -> Bool {
        allowsDictionaryCompression(request: request, accessControlAllowOrigin: accessControlAllowOrigin.map { .one($0) } ?? .absent)
    }

    static func allowsDictionaryCompression(request: HTTPFields, accessControlAllowOrigin: SingleFieldValue) -> Bool {
        switch SingleFieldValue(.secFetchSite, in: request) {
        case .absent: return true
        case .repeated: return false
        case .one(let site): if site.trimmingOWS() == "same-origin" { return true }
        }
        let mode: String
        switch SingleFieldValue(.secFetchMode, in: request) {
        case .absent: return true
        case .repeated: return false
        case .one(let m): mode = String(m.trimmingOWS())
        }
        if mode == "navigate" || mode == "same-origin" { return true }
        guard mode == "cors" else { return false }
        guard case .one(let allowRaw) = accessControlAllowOrigin else { return false }
        let allow = allowRaw.trimmingOWS()
        if allow == "*" { return true }
        guard case .one(let origin) = SingleFieldValue(.origin, in: request) else { return false }
        return !allow.isEmpty && allow == origin.trimmingOWS()
    }
}

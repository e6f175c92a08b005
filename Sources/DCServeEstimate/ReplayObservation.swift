/// What one replayed request produced in one pass: the bytes the client received and why dcserve
/// chose that coding. Pure value.
public struct ReplayObservation: Sendable, Equatable {
    public var status = 0
    /// `Content-Encoding` of the response ("identity" when none).
    public var coding = "identity"
    /// Response head bytes (status line, fields, blank line), `DCServe-Decision` excluded unless the
    /// configuration asked for it.
    public var headBytes = 0
    /// Response body bytes as on the wire (content-coded).
    public var bodyBytes = 0
    /// The `DCServe-Decision` of the response, when there was one.
    public var decision: Decision?
    /// `Link: rel="compression-dictionary"` fetches this response caused, and their bytes (heads and bodies).
    public var linkFetches = 0
    public var linkBytes = 0
    /// The client held a dictionary for this request that had expired (no dictionary offered because of it).
    public var heldExpired = false
    /// The client offered a dictionary (`Available-Dictionary`).
    public var offeredDictionary = false
    /// A transport or decoding failure (the response then counts with what was received).
    public var error: String?

    /// Everything the client received for this request.
    public var totalBytes: Int { headBytes + bodyBytes + linkBytes }

    /// A parsed `DCServe-Decision` value: `delta=dcz dict=… saved=…% vs=br rule=news` or
    /// `plain=br reason=unknown-dictionary rule=news` or `not-acceptable reason=not-acceptable`.
    public struct Decision: Sendable, Equatable {
        public var isDelta: Bool
        public var reason: String?
        public var rule: String?

        public init?(fieldValue: String) {
            var members: [String: String] = [:]
            for token in fieldValue.split(separator: " ") {
                let pair = token.split(separator: "=", maxSplits: 1)
                members[String(pair[0])] = pair.count > 1 ? String(pair[1]) : ""
            }
            guard members["delta"] != nil || members["plain"] != nil || members["not-acceptable"] != nil else { return nil }
            isDelta = members["delta"] != nil
            reason = members["reason"]
            rule = members["rule"]
        }
    }

    /// Why a request that belongs to no hit was a miss, in the estimate's words: `first-visit` (no
    /// dictionary held yet), `expired`, `private`, `no-rule`, `too-small`, `past-retention`, or
    /// dcserve's own reason otherwise (`unknown-dictionary`, `method`, `status`, …). Nil for a hit.
    public var missReason: String? {
        if decision?.isDelta == true { return nil }
        guard let reason = decision?.reason else { return "no-rule" }
        switch reason {
        case "no-dictionary-offered": return heldExpired ? "expired" : "first-visit"
        case "private-response", "credentialed-request": return "private"
        case "no-rule": return "no-rule"
        case "body-too-small": return "too-small"
        case "past-retention": return "past-retention"
        default: return reason
        }
    }
}

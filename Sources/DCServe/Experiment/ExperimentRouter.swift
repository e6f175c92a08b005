import DictionaryTransport
import HTTPServer
import HTTPTypes

/// The A/B switch's handler: assigns each request to a group (``ExperimentAssignment``) and sends it
/// through that group's chain — `control`: the inner handler behind a compression step without
/// dictionary rules (plain codings only: no `Use-As-Dictionary`, no dcb/dcz, no `Link`);
/// `dictionary` (and unkeyed requests): the chain as configured. Every response gets the group field
/// (`DCServe-Group: control|dictionary`), `Vary` on the key's field (a shared cache must not give one
/// group's response to the other), `group=` in its access-log line, and is counted in
/// ``ExperimentMetrics`` when metrics are on.
///
/// Immutable; thread-safe (the chains and metrics are).
public struct ExperimentRouter: HTTPHandler {
    public let assignment: ExperimentAssignment
    public let groupField: HTTPField.Name
    public let control: any HTTPHandler
    public let dictionary: any HTTPHandler
    public let metrics: ExperimentMetrics?
    /// The live view's per-group samples (nil without an admin listener).
    public let activity: ExperimentActivity?
    /// Response fields the control chain must not pass on: upstream partition fields, which the
    /// dictionary chain's compression step removes (the control chain has no rules to do it).
    public let controlStrippedFields: [HTTPField.Name]
    /// Paths whose responses differ between the groups (a rule advertises or compresses them, or a
    /// `Link` is added); when set (`server.sharedCaches: ignoreVary`), their responses in both groups
    /// get `Cache-Control: private`, since a shared cache that ignores `Vary` would hand one group's
    /// response to the other.
    public let groupDependent: (@Sendable (Substring) -> Bool)?
    private let varyName: String

    public init(assignment: ExperimentAssignment, groupField: HTTPField.Name, control: any HTTPHandler,
                dictionary: any HTTPHandler, metrics: ExperimentMetrics?, activity: ExperimentActivity? = nil,
                controlStrippedFields: [HTTPField.Name] = [], groupDependent: (@Sendable (Substring) -> Bool)? = nil) {
        self.assignment = assignment
        self.groupField = groupField
        self.control = control
        self.dictionary = dictionary
        self.metrics = metrics
        self.activity = activity
        self.controlStrippedFields = controlStrippedFields
        self.groupDependent = groupDependent
        varyName = switch assignment.source {
        case .header(let name): name.rawName
        case .cookie: "Cookie"
        }
    }

    public func handle(_ request: HTTPServerRequest, respond: @escaping @Sendable (consuming HTTPServerResponse) -> Void) {
        let group = assignment.group(of: request.head.headerFields)
        let isHead = request.method == .head
        let chain = group.usesDictionaries ? dictionary : control
        let privately = groupDependent?(request.pathWithoutQuery) ?? false
        chain.handle(request) { [groupField, controlStrippedFields, varyName, metrics, activity] response in
            var out = response
            if !group.usesDictionaries {
                for name in controlStrippedFields { out.head.headerFields[name] = nil }
            }
            out.head.headerFields[groupField] = group.fieldValue
            if privately {
                out.head.headerFields[.cacheControl] = DictionaryCompressionMiddleware.privately(out.head.headerFields[.cacheControl])
            }
            out.head.headerFields[.vary] = VaryField.merged(existing: out.head.headerFields[values: .vary], adding: [varyName])
            let decision = (response.accessLogNote as? DecisionLogNote)?.decision
            out.accessLogNote = ExperimentLogNote(group: group, inner: response.accessLogNote)
            if metrics != nil || activity != nil {
                let sent = isHead ? 0 : out.body.knownLength ?? 0
                let identity = isHead ? 0 : decision?.identityBytes.map(Int64.init) ?? sent
                metrics?.responded(group: group, rule: decision?.rule, sentBytes: sent, identityBytes: identity)
                let previous = out.onComplete
                out.onComplete = { bytes, nanoseconds in
                    previous?(bytes, nanoseconds)
                    metrics?.completed(group: group, rule: decision?.rule, nanoseconds: nanoseconds)
                    activity?.record(group: group, sent: sent, identity: identity, nanoseconds: nanoseconds)
                }
            }
            respond(out)
        }
    }
}

/// The access-log note of a response in an experiment: the inner note (the decision), then
/// `group=control|dictionary` (`group=dictionary keyed=no` for a request without a client id).
struct ExperimentLogNote: AccessLogNote {
    let group: ExperimentGroup
    let inner: (any AccessLogNote)?

    var description: String {
        let own = group == .unkeyed ? "group=dictionary keyed=no" : "group=\(group.fieldValue)"
        guard let inner else { return own }
        return "\(inner.description) \(own)"
    }

    func append(to line: inout String) {
        if let inner { inner.append(to: &line); line += " " }
        if group == .unkeyed { line += "group=dictionary keyed=no" } else { line += "group="; line += group.fieldValue }
    }
}

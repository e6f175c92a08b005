import HTTPCore
import HTTPTypes

/// Where a request's experiment key (its client id) comes from: a request header or a cookie, either
/// named by `experiment.key` or, for `{"partition": true}`, the header or cookie of the first rule
/// partitioned by one. Immutable; thread-safe.
public enum ExperimentKeySource: Sendable, Equatable {
    case header(HTTPField.Name)
    case cookie(String)

    /// The source `configuration.experiment.key` names; nil when there is none (no experiment, or
    /// `partition` without a rule partitioned by a request header or cookie).
    public init?(configuration c: DCServeConfiguration) {
        switch c.experiment.key {
        case .header(let name)?:
            guard let field = HTTPField.Name(name) else { return nil }
            self = .header(field)
        case .cookie(let name)?:
            self = .cookie(name)
        case .partition?:
            for rule in c.rules {
                switch rule.partition {
                case .header(let name)?:
                    guard let field = HTTPField.Name(name) else { continue }
                    self = .header(field)
                    return
                case .cookie(let name)?:
                    self = .cookie(name)
                    return
                default: continue
                }
            }
            return nil
        case nil:
            return nil
        }
    }

    /// The source's name in the assignment hash (`header:<lower-case name>` or `cookie:<name>`).
    var domain: String {
        switch self {
        case .header(let name): "header:\(name.canonicalName)"
        case .cookie(let name): "cookie:\(name)"
        }
    }

    /// The client id in `fields`, or nil when there is none: absent, empty, or given more than once
    /// with different values (fail closed: such a request is not assigned by either value).
    func value(in fields: HTTPFields) -> String? {
        var values: [String]
        switch self {
        case .header(let name): values = fields[values: name]
        case .cookie(let name): values = PartitionID.cookies(named: name, in: fields[values: .cookie])
        }
        values = values.filter { !$0.isEmpty && $0 != "\"\"" }
        guard let first = values.first, values.allSatisfy({ $0 == first }) else { return nil }
        return first
    }
}

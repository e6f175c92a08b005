import HTTPTypes

/// What a request carries for a header that must appear at most once with a single value.
///
/// RFC 9842 negotiation fails closed: a repeated `Available-Dictionary` or `Dictionary-ID` field (two
/// field lines, or one line holding a list) means "no dictionary".
public enum SingleFieldValue: Equatable, Sendable {
    /// The field is absent.
    case absent
    /// Exactly one field line.
    case one(String)
    /// More than one field line: the request is ambiguous.
    case repeated

    /// Classifies the field lines named `name` in `fields`.
    public init(_ name: HTTPField.Name, in fields: HTTPFields) {
        let values = fields[values: name]
        switch values.count {
        case 0: self = .absent
        case 1: self = .one(values[0])
        default: self = .repeated
        }
    }
}

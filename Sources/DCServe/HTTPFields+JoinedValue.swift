import HTTPTypes

extension HTTPFields {
    /// The same value as `self[name]` (the lines of `name` joined with ", "; nil when absent), without
    /// building a new string when there is exactly one line — the common case on the request path.
    /// Not for `Cookie` (whose lines `self[name]` joins with "; ").
    func joinedValue(_ name: HTTPField.Name) -> String? {
        var found: String?
        for field in self where field.name == name {
            if found != nil { return self[name] }
            found = field.value
        }
        return found
    }
}

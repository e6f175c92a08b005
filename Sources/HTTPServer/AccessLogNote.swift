/// Extra text a middleware attaches to a response for its access-log line (never sent). The line is
/// built only when the access log writes it; `append(to:)` then writes the note straight into it.
/// Values are `Sendable`: the line is written on the connection's loop.
public protocol AccessLogNote: CustomStringConvertible, Sendable {
    /// Appends the note's text to `line` (the default appends `description`).
    func append(to line: inout String)
}

extension AccessLogNote {
    public func append(to line: inout String) { line += description }
}

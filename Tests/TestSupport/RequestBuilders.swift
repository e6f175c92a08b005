import HTTPTypes

/// Header fields from (name, value) pairs, in order; a repeated name gives repeated field lines.
/// Traps on a name that is not a valid field name (a test's typo).
public func fields(_ pairs: (String, String)...) -> HTTPFields {
    fields(pairs)
}

/// Header fields from (name, value) pairs, in order (see ``fields(_:)-(String,String)...``).
public func fields(_ pairs: [(String, String)]) -> HTTPFields {
    var result = HTTPFields()
    for (name, value) in pairs { result.append(HTTPField(name: HTTPField.Name(name)!, value: value)) }
    return result
}

/// A request head as a client sends it over plain HTTP: `method` `path` with `authority` as Host.
public func testRequest(_ method: HTTPRequest.Method, _ path: String, authority: String = "localhost",
                        fields: HTTPFields = [:]) -> HTTPRequest {
    HTTPRequest(method: method, scheme: "http", authority: authority, path: path, headerFields: fields)
}

/// A GET request head over plain HTTP (see ``testRequest(_:_:authority:fields:)``).
public func testRequest(_ path: String, authority: String = "localhost", fields: HTTPFields = [:]) -> HTTPRequest {
    testRequest(.get, path, authority: authority, fields: fields)
}

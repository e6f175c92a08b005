import HTTPCore
import HTTPTypes

extension ParsedResponseHead {
    /// The head as an `HTTPTypes` response: status with its reason phrase, fields in order with the
    /// names as received (values as bytes decoded leniently; obs-text is kept as its bytes' UTF-8
    /// reading).
    public func makeHTTPResponse() -> HTTPResponse {
        var fields = HTTPFields()
        fields.reserveCapacity(fieldCount)
        for i in 0..<fieldCount {
            guard let name = HTTPField.Name(fieldName(at: i)) else { continue }  // names are tokens: never nil
            fields.append(HTTPField(name: name, value: fieldValue(at: i)))
        }
        return HTTPResponse(status: HTTPResponse.Status(code: status, reasonPhrase: reason), headerFields: fields)
    }
}

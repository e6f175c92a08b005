import HTTPCore
import HTTPTypes

extension ParsedResponseHead {
    /// The head as an `HTTPTypes` response: status with its reason phrase, fields in order with the
    /// names as received and values as received (obs-text kept byte for byte, as the proxy's
    /// one-pass head does: `HTTPField(name:receivedValue:)`).
    public func makeHTTPResponse() -> HTTPResponse {
        var fields = HTTPFields()
        fields.reserveCapacity(fieldCount)
        for i in 0..<fieldCount {
            guard let name = commonOrParsedName(at: i) else { continue }  // names are tokens: never nil
            fields.append(HTTPField(name: name, receivedValue: fieldValueBytes(at: i)))
        }
        return HTTPResponse(status: HTTPResponse.Status(code: status, reasonPhrase: reason), headerFields: fields)
    }

    /// The name of field `index`: a prebuilt one (``CommonFieldNames``) when the bytes spell one,
    /// else made from the bytes.
    public func commonOrParsedName(at index: Int) -> HTTPField.Name? {
        fieldNameBytes(at: index).withUnsafeBufferPointer(CommonFieldNames.name) ?? HTTPField.Name(fieldName(at: index))
    }
}

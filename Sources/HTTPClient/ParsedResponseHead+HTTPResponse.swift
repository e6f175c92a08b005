import HTTPCore
import HTTPTypes

extension ParsedResponseHead {
    /// The head as an `HTTPTypes` response: status with its reason phrase, fields in order with the
    /// names as received (an ASCII value as a String; any other value as its bytes, obs-text kept
    /// byte for byte: ``fieldValue(at:)`` below, as the proxy's one-pass head does).
    public func makeHTTPResponse() -> HTTPResponse {
        var fields = HTTPFields()
        fields.reserveCapacity(fieldCount)
        for i in 0..<fieldCount {
            guard let name = commonOrParsedName(at: i) else { continue }  // names are tokens: never nil
            fields.append(fieldValue(at: i, named: name))
        }
        return HTTPResponse(status: HTTPResponse.Status(code: status, reasonPhrase: reason), headerFields: fields)
    }

    /// Field `index` under `name`: an ASCII value as a String, any other as its bytes (obs-text kept).
    public func fieldValue(at index: Int, named name: HTTPField.Name) -> HTTPField {
        let bytes = fieldValueBytes(at: index)
        return bytes.allSatisfy { $0 < 0x80 } ? HTTPField(name: name, value: String(decoding: bytes, as: UTF8.self))
                                               : HTTPField(name: name, lenientValue: bytes)
    }

    /// The name of field `index`: a prebuilt one (``CommonFieldNames``) when the bytes spell one,
    /// else made from the bytes.
    public func commonOrParsedName(at index: Int) -> HTTPField.Name? {
        fieldNameBytes(at: index).withUnsafeBufferPointer(CommonFieldNames.name) ?? HTTPField.Name(fieldName(at: index))
    }
}

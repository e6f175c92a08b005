import DictionaryTransport
import HTTPTypes

/// `Vary` for responses whose coding depends on the request.
extension DictionaryCompressionMiddleware {
    /// `Vary` for a resource whose encoding depends on the request: the dictionary fields too when
    /// stored dictionaries may apply to it.
    func addVary(to fields: inout HTTPFields, scope: DictionaryScope?) {
        if scope != nil {
            VaryField.addDictionaryNames(to: &fields)
        } else {
            fields[.vary] = VaryField.merged(existing: fields[values: .vary], adding: ["Accept-Encoding"])
        }
    }
}

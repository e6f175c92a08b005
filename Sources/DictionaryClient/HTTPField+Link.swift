import HTTPTypes

extension HTTPField.Name {
    /// `Link` (RFC 8288), which swift-http-types does not predefine.
    static let link = HTTPField.Name("Link")!
}

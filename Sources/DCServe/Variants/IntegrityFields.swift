import HTTPTypes

/// Fields that describe one representation's bytes (RFC 9530 `Content-Digest`, `Repr-Digest`, the
/// obsolete `Content-MD5`): wrong as soon as dcserve changes the content coding, so they are removed
/// then (dcserve does not recompute them). Pure; thread-safe.
enum IntegrityFields {
    static let contentDigest = HTTPField.Name("Content-Digest")!
    static let reprDigest = HTTPField.Name("Repr-Digest")!
    static let contentMD5 = HTTPField.Name("Content-MD5")!

    /// Removes every integrity field from `fields` (one pass; nothing is copied when there is none).
    static func remove(from fields: inout HTTPFields) {
        guard fields.contains(where: { $0.name == contentDigest || $0.name == reprDigest || $0.name == contentMD5 }) else { return }
        fields[contentDigest] = nil
        fields[reprDigest] = nil
        fields[contentMD5] = nil
    }
}

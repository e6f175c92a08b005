import DictionaryCodec
import DictionaryTransport
import HTTPServer
import HTTPTypes

/// Reading and hashing the identity body (from the resource cache when the handler allows).
extension DictionaryCompressionMiddleware {
    /// The identity body's hash and length (and bytes when in memory), from the resource cache when
    /// the inner handler gave an ETag and declared its responses content-addressed (the cache is keyed
    /// by path and ETag only); nil when the body cannot be read (the response is then passed through).
    /// A large file's bytes are not kept: only its digest is cached, and the returned body reads the
    /// file again when an encode needs it.
    func identity(of response: HTTPServerResponse, path: Substring) -> IdentityBody? {
        let etag = response.isContentAddressed ? response.head.headerFields[.eTag] : nil
        let file: FileBody? = if case .file(let f) = response.body { f } else { nil }
        if let etag, let hit = resources.entry(path: path, etag: etag) {
            if hit.bytes != nil || file != nil { return IdentityBody(hit, file: file) }
            // A digest-only hit for a body given as bytes (same path and ETag: the same bytes).
            if case .bytes(let b) = response.body, b.count == hit.count {
                return IdentityBody(ResourceCache.Entry(bytes: b, hash: hit.hash), file: nil)
            }
        }
        if let etag, let file {
            // Identical concurrent requests for one version share one read and hash (SingleFlight).
            do {
                let entry = try reads.run("\(path)\u{0}\(etag)", inputBytes: Int(file.range.count), cached: {
                    resources.entry(path: path, etag: etag)
                }) {
                    resources.insert(path: path, etag: etag, bytes: try file.readAll())
                }.0
                return IdentityBody(entry, file: file)
            } catch {
                logger.warning("cannot read response body for compression", metadata: ["path": "\(path)", "error": "\(error)"])
                return nil
            }
        }
        let bytes: [UInt8]
        switch response.body {
        case .bytes(let b): bytes = b
        case .file(let f):
            do { bytes = try f.readAll() } catch {
                logger.warning("cannot read response body for compression", metadata: ["path": "\(path)", "error": "\(error)"])
                return nil
            }
        case .stream: return nil
        }
        guard let etag else { return IdentityBody(ResourceCache.Entry(bytes: bytes, hash: SHA256.hash(bytes)), file: nil) }
        return IdentityBody(resources.insert(path: path, etag: etag, bytes: bytes), file: nil)
    }
}

import DictionaryCodec
import DictionaryTransport
import HTTPServer
import HTTPTypes

/// The encoding step: a cached or newly encoded variant, and the fields it changes.
extension DictionaryCompressionMiddleware {
    /// The encoded body from the cache, or encoded now at the fast level (then, when `refineLater`, the
    /// best level is queued in the background), with the time spent encoding in this request (nil for a
    /// cache hit). nil when encoding failed (logged; identity is sent). Live responses pass
    /// `refineLater: false`: a version replaced within moments would pay a best-level encode (brotli 11,
    /// zstd 19: tens of milliseconds for 50 KB) that hardly any request could use.
    /// `cache: false` (a delta against one user's dictionary, which no other request can use; the
    /// "bytes saved" baseline of a live response) encodes without keeping the result, at `level` when
    /// given.
    func variant(of resource: IdentityBody, coding: ContentCoding,
                 dictionary: CompressionDictionary?, effects: inout ResponseEffects,
                 refineLater: Bool = true, cache: Bool = true, level: Int? = nil) -> (CachedVariant, Duration?)? {
        let key = VariantKey(resource: resource.hash, dictionary: dictionary?.hash, coding: coding)
        if let cached = variants.bestEntry(for: key) {
            observer.variantCache(hit: true)
            effects.variantHits.append(key)
            return (cached, nil)
        }
        observer.variantCache(hit: false)
        effects.isReplayable = false
        let fast = level ?? settings.fastLevels[coding] ?? coding.defaultLevel(.onTheFly)
        let best = settings.bestLevels[coding] ?? coding.defaultLevel(.precompressed)
        let encoded: CachedVariant
        let start = ContinuousClock.now
        var input: [UInt8] = []  // the leader's identity bytes, for the background best-level encode
        do {
            // Identical concurrent requests share one encode (SingleFlight). A file-backed body is read
            // (and checked against its hash) only here, by the leader.
            let (variant, role) = try encodes.run(key, inputBytes: resource.count, cached: { variants.bestEntry(for: key) }) {
                input = try resource.bytes()
                let v = CachedVariant(bytes: try coding.encode(input, dictionary: dictionary, level: fast), level: fast)
                observer.encoded(coding: coding, level: fast, duration: ContinuousClock.now - start)
                if cache { _ = variants.insert(v, for: key) }
                return v
            }
            encoded = variant
            if role != .leader { return (encoded, ContinuousClock.now - start) }
        } catch {
            logger.error("encoding failed; sending identity", metadata: ["coding": "\(coding)", "error": "\(error)"])
            return nil
        }
        let elapsed = ContinuousClock.now - start
        if best != fast && refineLater && cache {
            let bytes = input
            let variants = self.variants, observer = self.observer, logger = self.logger
            _ = background.submit(key) {
                do {
                    let start = ContinuousClock.now
                    let better = CachedVariant(bytes: try coding.encode(bytes, dictionary: dictionary, level: best), level: best)
                    observer.encoded(coding: coding, level: best, duration: ContinuousClock.now - start)
                    _ = variants.insert(better, for: key)
                } catch {
                    logger.error("background encoding failed", metadata: ["coding": "\(coding)", "error": "\(error)"])
                }
            }
        }
        return (encoded, elapsed)
    }

    func apply(_ variant: CachedVariant, coding: ContentCoding, dictionary: DictionaryHash?, to response: inout HTTPServerResponse) {
        response.body = .bytes(variant.bytes)
        response.head.headerFields[.contentEncoding] = coding.rawValue
        response.head.headerFields[.acceptRanges] = nil
        IntegrityFields.remove(from: &response.head.headerFields)
        if dictionary != nil {
            // The §9.3.3 gate decided this variant: a shared cache must not hand it to a request
            // the gate would refuse (RFC 9842 §9.3.3; SPEC.md §5).
            response.head.headerFields[.vary] = VaryField.merged(existing: response.head.headerFields[values: .vary],
                                                                 adding: Self.gateFieldNames)
        }
        if let etag = response.head.headerFields[.eTag] {
            response.head.headerFields[.eTag] = VariantETag.make(from: etag, coding: coding, dictionary: dictionary)
        }
    }
}

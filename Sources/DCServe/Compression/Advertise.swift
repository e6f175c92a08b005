import DictionaryCodec
import DictionaryTransport
import Foundation
import HTTPServer
import HTTPTypes

/// Static advertising: `Use-As-Dictionary`, the lifetime, and the bytes in the store.
extension DictionaryCompressionMiddleware {
    /// Whether `rule` may make `response` a dictionary. A private response (credentials, Set-Cookie,
    /// Cache-Control: private) becomes one only when the rule allows private responses or keeps them
    /// to their partition; a static file's (content-addressed) does not depend on who asks.
    static func mayAdvertise(_ response: HTTPServerResponse, of request: HTTPServerRequest, by rule: DictionaryRuleSet.Rule) -> Bool {
        (rule.isLive ? rule.partition != nil : response.isContentAddressed) || rule.allowPrivate
            || CompressionEligibility.privacyConcern(request: request.head.headerFields, response: response.head.headerFields) == nil
    }

    /// Adds `Use-As-Dictionary` and a fresh `Cache-Control`, and makes sure the store holds the bytes.
    /// `contentAddressed`: the response is a static file's (``HTTPServerResponse/isContentAddressed``).
    func advertise(_ resource: IdentityBody, rule: DictionaryRuleSet.Rule, path: Substring, fields: inout HTTPFields,
                   contentAddressed: Bool, effects: inout ResponseEffects) {
        guard let lifetime = Self.lifetime(rule, upstream: fields[.cacheControl], contentAddressed: contentAddressed) else { return }
        let (cacheControl, usable) = lifetime
        let advertisement = rule.advertisement(path: path)
        guard var value = advertisements.value(for: "\(rule.name)\u{0}\(path)", compute: { _ in try? advertisement.fieldValue() })
        else { return }
        if let ttl = rule.ttlSeconds { value += ", ttl=\(ttl)" }
        let now = Date()
        var isNew = storedThisRun.withLock { stored in
            if stored.count >= Self.maxStoredThisRun { stored.removeAll(keepingCapacity: true) }
            return stored.insert(resource.hash).inserted
        }
        // Stored earlier in this run, but retention may have removed it since: then store it again,
        // since every response advertised as a dictionary must be in the store.
        if !isNew && !store.recordServed(resource.hash, at: now) { isNew = true }
        if isNew {
            do {
                _ = try store.put(try resource.bytes(), description: DictionaryDescription(
                    pattern: rule.match, matchDestinations: rule.matchDest, id: advertisement.id,
                    rule: rule.name, sourcePath: String(path), maxAge: usable), now: now)
                observer.storedDictionary(resource.hash, bytes: resource.count)
                storeHealth.succeeded(logger: logger)
                effects.isReplayable = false
            } catch {
                // Not advertising a dictionary we could not store: the client could never use it.
                _ = storedThisRun.withLock { $0.remove(resource.hash) }
                storeHealth.failed("\(error)", logger: logger, message: "cannot store dictionary; not advertising it",
                                   metadata: ["path": "\(path)"])
                effects.isReplayable = false
                return
            }
        } else {
            effects.advertised = resource.hash
        }
        fields[.useAsDictionary] = value
        fields[.cacheControl] = cacheControl
    }

    /// The `Cache-Control` an advertised response of `rule` gets and how long clients may use it
    /// (seconds); nil when the policy is `upstream` (or `automatic` for a response that is not a static
    /// file's) and the upstream's value does not allow use as a dictionary (then the response is not
    /// advertised: no freshness is invented).
    static func lifetime(_ rule: DictionaryRuleSet.Rule, upstream: String?, contentAddressed: Bool) -> (String, Int)? {
        switch rule.lifetime {
        case .automatic where contentAddressed, .maxAge:
            return ("max-age=\(rule.maxAgeSeconds)", rule.maxAgeSeconds)
        case .cacheControl(let value):
            return usableSeconds.value(for: value) { DictionaryCacheControl($0).usableSeconds }.map { (value, $0) }
        case .upstream, .automatic:
            guard let upstream, let usable = usableSeconds.value(for: upstream, compute: { DictionaryCacheControl($0).usableSeconds })
            else { return nil }
            return (upstream, usable)
        }
    }

    /// How long a `Cache-Control` value lets clients use a dictionary
    /// (``DictionaryCacheControl/usableSeconds``), computed once per value: rules and upstreams repeat
    /// a few values on every response.
    static let usableSeconds = BoundedMemo<String, Int?>(capacity: 1024)
}

import DictionaryCodec
import DictionaryTransport
import Foundation
import HTTPTypes

/// Live advertising: each proxied version recorded, usable at once, written to the store off the request path.
extension DictionaryCompressionMiddleware {
    /// Blocks until every live version queued for the store is written (shutdown).
    public func drainLiveWrites() { liveWrites.drain() }

    /// Advertises a live response (a rule with `upstreamVersions` or `partition`): records it as the
    /// newest version of (rule, partition, path), makes it usable at once (``DictionaryLibrary/insert``)
    /// and writes it to the store on a background queue — a version lost before it is written only
    /// costs a later miss (the store verifies bytes on load). Not advertised when the lifetime policy
    /// gives no `Cache-Control` that lets clients use it.
    /// `records: false` (a HEAD answered from its GET): the fields only; no version is recorded or stored
    /// (the client gets no body to keep).
    func advertiseLive(_ resource: IdentityBody, rule: DictionaryRuleSet.Rule, path: Substring, partition: String,
                       fields: inout HTTPFields, records: Bool = true) {
        guard let lifetime = Self.lifetime(rule, upstream: fields[.cacheControl], contentAddressed: false) else { return }
        let (cacheControl, usable) = lifetime
        let advertisement = rule.advertisement(path: path)
        guard var value = advertisements.value(for: "\(rule.name)\u{0}\(path)", compute: { _ in try? advertisement.fieldValue() })
        else { return }
        if let ttl = rule.ttlSeconds { value += ", ttl=\(ttl)" }
        guard records else {
            fields[.useAsDictionary] = value
            fields[.cacheControl] = rule.partition == nil ? cacheControl : Self.privately(cacheControl)
            return
        }
        // Live responses are proxied, buffered bodies: their bytes are held (no read here).
        guard let bytes = try? resource.bytes() else { return }
        let owner = rule.partition == nil ? nil : partition
        // While store writes fail, a version is written (a probe: the first success resumes advertising)
        // but not advertised: a client could never use a version the store does not hold.
        // Not in the live index either: it would push the client's previous version out of retention.
        // Nor when the store's budget (or the index's memory) is full of versions clients were promised
        // (``LiveVersionIndex/offer``): it could not be kept until this client returns.
        let advertises = !storeHealth.isFailing
        // Nor when the store's writer is too far behind to queue it (the disk slower than the traffic):
        // it would be advertised and never stored. The room is reserved, so no other request can take
        // it before this version's submit below.
        var reservation: LiveStoreWriter.Reservation?
        if advertises {
            reservation = liveWrites.reserve(bytes: bytes.count)
            if reservation == nil && store.metadata(resource.hash, partition: owner) == nil {
                liveWrites.refuseOverloaded()
                return
            }
        }
        // The reservation is given back on every path that does not submit.
        var submitted = false
        defer { if !submitted, let reservation { liveWrites.cancel(reservation) } }
        if advertises && !live.offer(resource.hash, at: LiveVersionIndex.SlotKey(rule: rule.name, partition: partition, path: String(path)),
                                     bytes: resource.count, keepSeconds: Double(usable)) {
            observer.live(rule: rule.name, .overBudget)
            overBudget.refused(rule: rule.name, index: live)
            return
        }
        observer.live(rule: rule.name, .response)
        let loaded = advertises && library.touch(resource.hash, partition: owner)
        if advertises && !loaded {
            // Hashed already (the identity body's hash); used for a delta once or twice: dcz references
            // it as a prefix rather than building a CDict.
            library.insert(CompressionDictionary(bytes: bytes, knownHash: resource.hash, prefersPrefix: true),
                           candidate: DictionaryCandidate(hash: resource.hash, pattern: rule.match, matchDestinations: rule.matchDest),
                           partition: owner)
        }
        let now = Date()
        // A version the library holds was written (or queued) when it was first seen: only its
        // last-served time changes, unless the store lost it. A version new to the library (nearly
        // every live response) is written without asking the store first: the write is an upsert,
        // so one the store kept from an earlier run only has its record refreshed.
        if !loaded || !store.recordServed(resource.hash, partition: owner, at: now) {
            let description = DictionaryDescription(
                pattern: rule.match, matchDestinations: rule.matchDest, id: advertisement.id, rule: rule.name,
                sourcePath: String(path), maxAge: usable, partition: owner)
            let live = self.live, hash = resource.hash
            submitted = true
            liveWrites.submit(.init(partition: owner, hash: hash),
                              write: DictionaryStoreWrite(bytes: bytes, hash: hash, description: description, now: now),
                              reservation: reservation, stillRetained: { !advertises || live.retains(hash, partition: partition) })
        }
        guard advertises else { return }
        fields[.useAsDictionary] = value
        fields[.cacheControl] = rule.partition == nil ? cacheControl : Self.privately(cacheControl)
    }
}

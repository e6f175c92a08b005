import DictionaryCodec
import DictionaryTransport
import Foundation

/// The side effects one compression-middleware response had (metrics, store bookkeeping, cache
/// recency), recorded while the response is computed so that a ``ResponseMemo`` hit can repeat them
/// exactly: a memoised response must count in every metric as if it had been computed again.
///
/// Only responses made entirely from state the memo can validate are replayable. Anything else —
/// a variant-cache miss or an encode, storing a dictionary, a failed dictionary lookup (the store may
/// learn that hash later), a failed read, a size report deferred to the background — marks the
/// record not replayable and the response is not memoised. A value type, `Sendable`.
struct ResponseEffects: Sendable {
    /// False once the response did something a replay cannot reproduce (see the type's documentation).
    var isReplayable = true
    /// Dictionary served with `Use-As-Dictionary` (already stored by this process): `recordServed`.
    var advertised: DictionaryHash?
    /// The negotiation outcome reported to the observer.
    var decision: EncodingDecision?
    /// Variant-cache hits reported to the observer, by key (a replay looks them up again: recency).
    var variantHits: [VariantKey] = []
    /// Dictionary a dcb/dcz body was encoded against: marked used again in the library (recency) and `recordServed`.
    var dictionaryUsed: DictionaryHash?
    /// The sizes reported for a compressible response.
    var sizes: (identity: Int, bestPlain: Int, sent: Int)?
    /// The decision the response carries (the memo replays it for every hit: log, metrics, live view,
    /// `DCServe-Decision`). Set by `process`.
    var response: ResponseDecision?
    /// Why the live index refused the hash the client named (reported by negotiation as unknown).
    var liveRefusal: DecisionReason?

    /// Repeats the recorded effects against the same observer, store, caches and library. False, with
    /// nothing repeated, when the advertised dictionary is no longer in the store (retention removed
    /// it): the response must then be computed again, which stores it again.
    func replay(path: Substring, observer: any CompressionObserver, store: any DictionaryStore,
                variants: VariantCache, library: DictionaryLibrary) -> Bool {
        let now = Date()
        if let advertised, !store.recordServed(advertised, at: now) { return false }
        if let decision { observer.decided(decision, path: path) }
        for key in variantHits {
            _ = variants.bestEntry(for: key)
            observer.variantCache(hit: true)
        }
        if let dictionaryUsed {
            library.touch(dictionaryUsed)
            store.recordServed(dictionaryUsed, at: now)
        }
        if let sizes {
            observer.sizes(rule: response?.rule, identity: sizes.identity, bestPlain: sizes.bestPlain, sent: sizes.sent)
        }
        return true
    }
}

import DictionaryCodecTypes
import DictionaryTransportFields
import Foundation
import HTTPTypes
import RawStructuredFieldValues

/// Decides whether a response becomes a dictionary (RFC 9842 §2.1, Chromium's rules). Pure; thread-safe.
///
/// Rules, in order: a secure context (HTTPS or loopback); status 200; one valid `Use-As-Dictionary`
/// (`type` raw only, `id` ≤ 1024 printable characters — see ``UseAsDictionary``); a `match` that is a
/// valid same-origin pattern without regexp groups (``URLPattern``); `match-dest` an inner list whose
/// unknown destinations are dropped (if every listed destination is unknown the dictionary could match
/// nothing and is refused); a decoded body of at most ``maximumBodySize``; a positive lifetime
/// (``DictionaryLifetime``).
public enum DictionaryRegistrar {
    /// 100 MiB, Chromium's limit.
    public static let maximumBodySize = 100 << 20

    public enum Outcome: Hashable, Sendable {
        /// No `Use-As-Dictionary` on the response.
        case notADictionary
        case accepted(StoredDictionary)
        case rejected(String)
    }

    public static func evaluate(
        target: ClientRequestTarget, partition: String, status: Int, fields: HTTPFields,
        decodedBody: [UInt8], now: Date
    ) -> Outcome {
        let values = fields[values: .useAsDictionary]
        guard !values.isEmpty else { return .notADictionary }
        guard target.isSecureContext else { return .rejected("not a secure context (HTTPS or loopback only)") }
        guard status == 200 else { return .rejected("status \(status) is not 200") }
        let header: UseAsDictionary
        do {
            guard let parsed = try UseAsDictionary.parse(fields) else { return .notADictionary }
            header = parsed
        } catch { return .rejected(error.description) }
        do {
            _ = try URLPattern(header.match, base: target.patternBase)
        } catch { return .rejected(error.description) }
        let destinations = header.matchDestinations.filter { FetchDestination.known.contains($0) }
        if !header.matchDestinations.isEmpty, destinations.isEmpty {
            return .rejected("match-dest names no known destination: \(header.matchDestinations)")
        }
        guard decodedBody.count <= maximumBodySize else {
            return .rejected("dictionary body of \(decodedBody.count) bytes exceeds \(maximumBodySize)")
        }
        let ttl = ttlMember(values.first!)
        switch DictionaryLifetime.compute(fields: fields, ttl: ttl, now: now) {
        case .notStorable(let reason):
            return .rejected(reason)
        case .storable(let seconds):
            let hash = DictionaryBytes.sha256(decodedBody)
            let id = header.id?.value
            return .accepted(StoredDictionary(
                partition: partition, origin: target.origin, sourceURL: target.description, match: header.match,
                matchDestinations: destinations, id: (id?.isEmpty ?? true) ? nil : id, hashHex: hash.hex,
                size: decodedBody.count, fetchedAt: now, expiresAt: now.addingTimeInterval(seconds), lastUsedAt: now))
        }
    }

    /// The `ttl` member (an sf-integer of seconds), when present and an integer.
    static func ttlMember(_ value: String) -> Int? {
        var parser = StructuredFieldValueParser(Array(value.utf8))
        guard let members = try? parser.parseDictionaryFieldValue(), let ttl = members["ttl"],
              case .item(let item) = ttl, case .integer(let seconds) = item.rfc9651BareItem else { return nil }
        return Int(seconds)
    }
}

import DictionaryCodec

/// Picking one content coding among those the server can produce (RFC 9110 §12.5.3).
///
/// Order: highest client weight first; among equal weights, the smallest body when the size of
/// **every** tied candidate is known (e.g. all variants cached), otherwise the server preference
/// `dcz > dcb > zstd > br > gzip > identity` (``preferenceOrder``) — except that when preference
/// picks a coding of a pair (``comparedBySize(_:_:)``: dcb and dcz, or zstd and br) whose size is
/// known, the smallest tied coding of that pair of known size wins (dcb and dcz against the same
/// dictionary, or zstd and br, are compared whatever unknown gzip/deflate tie with them). Nothing
/// with weight > 0 → ``Outcome/notAcceptable`` (the only case for a 406).
public enum CodingChoice {
    /// A coding the server can produce, with the size of its body when already known.
    public struct Candidate: Hashable, Sendable {
        public var coding: ContentCoding
        public var size: Int?
        public init(_ coding: ContentCoding, size: Int? = nil) {
            self.coding = coding
            self.size = size
        }
    }

    public enum Outcome: Hashable, Sendable {
        case coding(ContentCoding)
        case notAcceptable
    }

    /// Server preference when weights tie and sizes do not decide, best first.
    public static let preferenceOrder: [ContentCoding] = [.dcz, .dcb, .zstd, .br, .gzip, .identity]

    /// Position of `c` in `preference`; codings not listed rank after every listed one, identity last.
    static func rank(_ c: ContentCoding, in preference: [ContentCoding]) -> Int {
        if let i = preference.firstIndex(of: c) { return i }
        return c == .identity ? preference.count + 1 : preference.count
    }

    /// Chooses among `candidates` for a request whose `Accept-Encoding` is `accept`; `preference`
    /// (best first) breaks ties in weight when sizes do not.
    public static func choose(_ candidates: [Candidate], accept: AcceptEncoding,
                              preference: [ContentCoding] = preferenceOrder) -> Outcome {
        func rank(_ c: ContentCoding) -> Int { Self.rank(c, in: preference) }
        let weighted = candidates.map { ($0, accept.weight(of: $0.coding)) }.filter { $0.1 > 0 }
        guard let best = weighted.map(\.1).max() else { return .notAcceptable }
        let tied = weighted.filter { $0.1 == best }.map(\.0)
        if tied.allSatisfy({ $0.size != nil }) {
            let pick = tied.min { a, b in (a.size!, rank(a.coding)) < (b.size!, rank(b.coding)) }!
            return .coding(pick.coding)
        }
        let preferred = tied.min { rank($0.coding) < rank($1.coding) }!
        guard preferred.size != nil else { return .coding(preferred.coding) }
        let sized = tied.filter { comparedBySize(preferred.coding, $0.coding) && $0.size != nil }
        return .coding(sized.min { a, b in (a.size!, rank(a.coding)) < (b.size!, rank(b.coding)) }!.coding)
    }

    /// Whether `a` and `b` are the same pair of codings that a server encodes both ways for a small
    /// body: the dictionary codings (dcb, dcz), or zstd and br. Reflexive.
    public static func comparedBySize(_ a: ContentCoding, _ b: ContentCoding) -> Bool {
        a == b || counterpart(of: a) == b
    }

    /// The other coding of `coding`'s pair: dcb ↔ dcz, br ↔ zstd; nil for gzip and identity.
    public static func counterpart(of coding: ContentCoding) -> ContentCoding? {
        switch coding {
        case .dcz: .dcb
        case .dcb: .dcz
        case .zstd: .br
        case .br: .zstd
        default: nil
        }
    }
}

/// The fixed header in front of a dcb or dcz body (RFC 9842 §4, §5): a magic followed by the 32-byte
/// SHA-256 of the dictionary.
///
/// - dcb: `FF 44 43 42` + hash (36 bytes)
/// - dcz: `5E 2A 4D 18 20 00 00 00` + hash (40 bytes; a zstd skippable frame of length 32)
public struct DictionaryFrameHeader: Sendable, Hashable {
    /// `.dcb` or `.dcz`.
    public let coding: ContentCoding
    /// The dictionary the body was compressed with.
    public let hash: DictionaryHash

    public static let dcbMagic: [UInt8] = [0xFF, 0x44, 0x43, 0x42]
    public static let dczMagic: [UInt8] = [0x5E, 0x2A, 0x4D, 0x18, 0x20, 0x00, 0x00, 0x00]

    public init(coding: ContentCoding, hash: DictionaryHash) {
        precondition(coding.usesDictionary, "only dcb and dcz have a dictionary header")
        self.coding = coding
        self.hash = hash
    }

    /// Header length for a dictionary coding: 36 for dcb, 40 for dcz, 0 otherwise.
    public static func length(of coding: ContentCoding) -> Int {
        switch coding {
        case .dcb: 36
        case .dcz: 40
        default: 0
        }
    }

    /// The magic bytes of `coding` (dcb's for dcb, dcz's otherwise).
    package static func magic(of coding: ContentCoding) -> [UInt8] {
        coding == .dcb ? dcbMagic : dczMagic
    }

    /// Header length in bytes.
    public var length: Int { Self.length(of: coding) }

    /// The header bytes.
    public var bytes: [UInt8] { Self.magic(of: coding) + hash.bytes }

    /// Which dictionary coding `prefix` starts with, judging by the magic alone (needs 4 bytes for dcb,
    /// 8 for dcz); nil if neither.
    public static func detect<Bytes: Collection<UInt8>>(_ prefix: Bytes) -> ContentCoding? {
        if prefix.starts(with: dcbMagic) { return .dcb }
        if prefix.starts(with: dczMagic) { return .dcz }
        return nil
    }

    /// Parses the header at the start of `body` (extra bytes after it are ignored).
    /// - Throws: `CodecError.wrongMagic` if `body` starts with neither magic (reported against
    ///   `expecting`, or dcz when nil), `CodecError.truncated` if the magic matches but the body is
    ///   shorter than the header.
    public static func parse<Bytes: Collection<UInt8>>(
        _ body: Bytes, expecting: ContentCoding? = nil
    ) throws -> DictionaryFrameHeader {
        let head = Array(body.prefix(40))
        let coding: ContentCoding
        if let expecting, expecting.usesDictionary {
            guard head.starts(with: magic(of: expecting)) || magic(of: expecting).starts(with: head) else {
                throw CodecError.wrongMagic(expected: expecting)
            }
            coding = expecting
        } else if let detected = detect(head) {
            coding = detected
        } else {
            // A strict prefix of a magic is a truncated header, anything else is the wrong magic.
            if !head.isEmpty, dcbMagic.starts(with: head) || dczMagic.starts(with: head) {
                throw CodecError.truncated
            }
            throw CodecError.wrongMagic(expected: expecting ?? .dcz)
        }
        let length = length(of: coding)
        guard head.count >= length else { throw CodecError.truncated }
        let hash = DictionaryHash(bytes: head[(length - 32)..<length])!
        return DictionaryFrameHeader(coding: coding, hash: hash)
    }
}

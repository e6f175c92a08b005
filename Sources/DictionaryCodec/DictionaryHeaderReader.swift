/// Accumulates a dcb/dcz header from streamed chunks and checks it against the decoder's dictionary.
struct DictionaryHeaderReader {
    let coding: ContentCoding
    let dictionaryHash: DictionaryHash
    private var buffer: [UInt8] = []
    private(set) var isComplete = false

    init(coding: ContentCoding, dictionaryHash: DictionaryHash) {
        self.coding = coding
        self.dictionaryHash = dictionaryHash
        buffer.reserveCapacity(DictionaryFrameHeader.length(of: coding))
    }

    /// Consumes header bytes from the front of `input`; returns how many it took. Throws on the wrong
    /// magic (as soon as a byte differs) or a hash that is not the dictionary's.
    mutating func consume(_ input: UnsafeRawBufferPointer) throws -> Int {
        guard !isComplete else { return 0 }
        let length = DictionaryFrameHeader.length(of: coding)
        let take = min(length - buffer.count, input.count)
        buffer.append(contentsOf: input.prefix(take))
        let magic = DictionaryFrameHeader.magic(of: coding)
        let checked = min(buffer.count, magic.count)
        guard buffer[0..<checked].elementsEqual(magic[0..<checked]) else {
            throw CodecError.wrongMagic(expected: coding)
        }
        if buffer.count == length {
            let found = DictionaryHash(bytes: buffer[magic.count...])!
            guard found == dictionaryHash else {
                throw CodecError.dictionaryHashMismatch(expected: dictionaryHash, found: found)
            }
            isComplete = true
        }
        return take
    }
}

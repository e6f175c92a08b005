import DictionaryClient
import DictionaryCodec
import HTTPTypes

/// The sink of one `dcserve fetch` exchange: undoes the response's content codings while the body
/// arrives, with the streaming decoders of DictionaryCodec and the limits of
/// ``ResponseBodyDecoder`` (dcb/dcz only against the dictionary the request named, their header
/// checked against it before any byte is decoded), writes the decoded bytes to `output`, hashes them,
/// and keeps them in memory only when the response may become a dictionary (it carries
/// `Use-As-Dictionary`), up to ``DictionaryRegistrar/maximumBodySize``. Memory is bounded by that
/// and the decoders' windows, whatever the body's size.
///
/// Decoding failures are thrown as ``DictionaryClientError``s (the response must be dropped), output
/// failures as the output's `CLIError`. Not thread-safe (see ``FetchResponseSink``).
final class FetchResponseDecoder: FetchResponseSink {
    /// One content coding being undone; `header` collects a dcb/dcz header until it can be checked.
    private struct Stage {
        let coding: ContentCoding
        let decoder: any ContentDecoder
        var header: [UInt8]?
    }

    let dictionary: CompressionDictionary?
    let output: CLIOutputFile?
    /// Fail once more than this many decoded bytes arrive (nil: no bound; the output takes them all).
    let maxDecodedBytes: Int?

    private(set) var status: Int?
    private(set) var reason = ""
    private(set) var fields = HTTPFields()
    /// `Content-Encoding` tokens in the order applied.
    private(set) var codings: [String] = []
    private(set) var wireBytes = 0
    private(set) var decodedBytes = 0
    /// The decoded body, kept when the response carries `Use-As-Dictionary` and it fits.
    private(set) var retained: [UInt8]?
    /// The response carried `Use-As-Dictionary` but its body was larger than a dictionary may be.
    private(set) var tooLargeForADictionary = false
    private var stages: [Stage] = []
    private let hasher = SHA256.Hasher()
    private var finished = false

    init(dictionary: CompressionDictionary?, output: CLIOutputFile?, maxDecodedBytes: Int? = nil) {
        self.dictionary = dictionary
        self.output = output
        self.maxDecodedBytes = maxDecodedBytes
    }

    func receiveHead(status: Int, reason: String, fields: HTTPFields) throws {
        self.status = status
        self.reason = reason
        self.fields = fields
        codings = ResponseBodyDecoder.codings(fields)
        if fields[.useAsDictionary] != nil { retained = [] }
        stages = []
        for name in codings.reversed() {
            guard let coding = ContentCoding(token: name), coding != .identity else {
                throw DictionaryClientError.unsupportedContentCoding(name)
            }
            var stageDictionary: CompressionDictionary?
            if coding.usesDictionary {
                guard let dictionary else { throw DictionaryClientError.dictionaryCodingWithoutDictionary(coding) }
                stageDictionary = dictionary
            }
            do {
                let decoder = try coding.makeDecoder(dictionary: stageDictionary, limits: DecodeLimits(maxOutput: Int.max))
                stages.append(Stage(coding: coding, decoder: decoder, header: coding.usesDictionary ? [] : nil))
            } catch {
                throw DictionaryClientError.decodeFailed(coding: coding, reason: error as? CodecError ?? .corrupt("\(error)"))
            }
        }
    }

    func receiveBody(_ bytes: UnsafeRawBufferPointer) throws {
        wireBytes += bytes.count
        try feed(0, bytes)
    }

    /// Ends the body: flushes every decoder (a truncated stream fails here). Returns the SHA-256 of
    /// the decoded body.
    func finish() throws -> DictionaryHash {
        precondition(!finished)
        finished = true
        for index in stages.indices {
            if stages[index].header != nil {
                // The body ended inside the dcb/dcz header.
                throw DictionaryClientError.truncatedDictionaryHeader(stages[index].coding)
            }
            let rest: [UInt8]
            do { rest = try stages[index].decoder.finish() } catch { throw decodeError(stages[index].coding, error) }
            try rest.withUnsafeBytes { try feed(index + 1, $0) }
        }
        return hasher.finalize()
    }

    /// Passes `bytes` into stage `index` (past the last stage: the decoded body).
    private func feed(_ index: Int, _ bytes: UnsafeRawBufferPointer) throws {
        guard !bytes.isEmpty else { return }
        guard index < stages.count else { return try deliver(bytes) }
        var input = bytes
        var checkedHeader: [UInt8]?
        if var header = stages[index].header {
            let coding = stages[index].coding
            let length = DictionaryFrameHeader.length(of: coding)
            let take = min(length - header.count, input.count)
            header.append(contentsOf: input[..<take])
            input = UnsafeRawBufferPointer(rebasing: input[take...])
            guard header.count == length else {
                stages[index].header = header
                return
            }
            try check(header, coding: coding)
            stages[index].header = nil
            checkedHeader = header
        }
        let coding = stages[index].coding
        let decoder = stages[index].decoder
        do {
            if let checkedHeader {
                let out = try decoder.update(checkedHeader)
                try out.withUnsafeBytes { try feed(index + 1, $0) }
            }
            guard !input.isEmpty else { return }
            let out = try decoder.update(input)
            try out.withUnsafeBytes { try feed(index + 1, $0) }
        } catch let error as DictionaryClientError {
            throw error
        } catch let error as CodecError {
            throw decodeError(coding, error)
        }
    }

    /// A complete dcb/dcz header must name exactly the dictionary the request advertised.
    private func check(_ header: [UInt8], coding: ContentCoding) throws {
        let parsed: DictionaryFrameHeader
        do { parsed = try DictionaryFrameHeader.parse(header, expecting: coding) }
        catch { throw DictionaryClientError.wrongMagic(coding) }
        guard let dictionary, parsed.hash == dictionary.hash else {
            throw DictionaryClientError.dictionaryHashMismatch(
                coding: coding, advertised: dictionary?.hash ?? parsed.hash, found: parsed.hash)
        }
    }

    private func deliver(_ bytes: UnsafeRawBufferPointer) throws {
        decodedBytes += bytes.count
        if let maxDecodedBytes, decodedBytes > maxDecodedBytes {
            throw DictionaryClientError.decodeFailed(
                coding: stages.last?.coding ?? .identity, reason: .outputLimitExceeded(limit: maxDecodedBytes))
        }
        hasher.update(bytes)
        if retained != nil {
            if decodedBytes <= DictionaryRegistrar.maximumBodySize {
                retained!.append(contentsOf: bytes)
            } else {
                retained = nil
                tooLargeForADictionary = true
            }
        }
        try output?.write(bytes)
    }

    private func decodeError(_ coding: ContentCoding, _ error: any Error) -> DictionaryClientError {
        if let error = error as? DictionaryClientError { return error }
        return .decodeFailed(coding: coding, reason: error as? CodecError ?? .corrupt("\(error)"))
    }
}

import ArgumentParser
import DictionaryCodec
import Foundation

/// `dcserve decompress`: a dcz/dcb/zstd/br/gzip body back into the original bytes.
struct DecompressCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "decompress",
        abstract: "Decompress a dcz, dcb, zstd, br or gzip body.",
        discussion: """
            dcz and dcb bodies are recognised by their magic and need --dictionary: the file whose \
            SHA-256 is in the body's header (`dcserve inspect` shows it). zstd and gzip are \
            recognised by their magic too; brotli has none, so pass --encoding br. The output is \
            written only if the whole body decoded without error: a regular file is replaced atomically, \
            a device or FIFO (/dev/null) is written through, - is standard output.
            """
    )

    @Option(name: .shortAndLong, help: "Dictionary file (required for dcz and dcb bodies).")
    var dictionary: String?

    @Option(name: .shortAndLong, help: "The body's coding when it cannot be detected (br), or to insist on one.")
    var encoding: ContentCoding?

    @Option(name: .shortAndLong, help: "Output file (- for standard output).")
    var output: String

    @Option(help: "Refuse to produce more than this many bytes (decompression-bomb guard).")
    var maxOutput: Int = 1 << 32

    @Option(help: "Refuse windows larger than 2^N bytes (default: the coding's standard limit).")
    var maxWindowLog: Int?

    @Argument(help: "Input file.")
    var input: String

    func run() throws {
        let body = try CLIFile.read(input)
        let coding = try detectCoding(body)
        var dictionary: CompressionDictionary?
        if coding.usesDictionary {
            let header: DictionaryFrameHeader
            do { header = try DictionaryFrameHeader.parse(body, expecting: coding) } catch let error as CodecError {
                throw CLIError("\(input): \(error)")
            }
            guard let path = self.dictionary else {
                throw CLIError(
                    "\(input) is \(coding) with dictionary \(header.hash.hex): pass --dictionary FILE")
            }
            let loaded = try CLIFile.dictionary(path)
            guard loaded.hash == header.hash else {
                throw CLIError(
                    "\(path) is not the dictionary of \(input): it hashes to \(loaded.hash.hex), the body needs \(header.hash.hex)")
            }
            dictionary = loaded
        } else if self.dictionary != nil {
            throw CLIError("--dictionary is only used with dcz and dcb bodies; \(input) is \(coding)")
        }
        let decoded: [UInt8]
        do {
            decoded = try coding.decode(
                body, dictionary: dictionary, limits: DecodeLimits(maxOutput: maxOutput, maxWindowLog: maxWindowLog))
        } catch let error as CodecError {
            throw CLIError("\(input): \(coding): \(error)")
        }
        try CLIOutputFile.write(decoded, to: output)
    }

    private func detectCoding(_ body: [UInt8]) throws -> ContentCoding {
        let detected: ContentCoding? =
            DictionaryFrameHeader.detect(body)
            ?? (body.starts(with: [0x28, 0xB5, 0x2F, 0xFD]) ? .zstd : nil)
            ?? (body.starts(with: [0x1F, 0x8B]) ? .gzip : nil)
        switch (encoding, detected) {
        case (nil, let detected?):
            return detected
        case (nil, nil):
            throw CLIError("\(input): cannot detect the coding (no dcz/dcb/zstd/gzip magic): pass --encoding br")
        case (let given?, let detected?) where given != detected && (given.usesDictionary || detected.usesDictionary):
            throw CLIError("\(input): --encoding \(given) given, but the body starts with the \(detected) magic")
        case (let given?, _):
            if given == .identity { throw CLIError("--encoding must be dcz, dcb, zstd, br or gzip") }
            return given
        }
    }
}

import ArgumentParser
import DictionaryCodec
import Foundation
import PortableZstd

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
            a device or FIFO (/dev/null) is written through, - is standard output. \
            --decoder swift decodes zstd and dcz bodies with the pure-Swift decoder (PortableZstd) \
            instead of libzstd; it also accepts concatenated zstd frames.
            """
    )

    /// Which implementation decodes zstd and dcz bodies.
    enum Decoder: String, ExpressibleByArgument, CaseIterable {
        /// libzstd through DictionaryCodec.
        case c
        /// PortableZstd, the pure-Swift decoder an app without libzstd uses.
        case swift
    }

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

    @Option(help: "Decoder for zstd and dcz bodies: c (libzstd) or swift (pure Swift).")
    var decoder: Decoder = .c

    @Option(name: .customLong("repeat"), help: ArgumentHelp(
        "Benchmark: decode the body N times in this process (dictionary prepared once) and report ms/run and MB/s of output on stderr.",
        valueName: "N"))
    var repetitions: Int = 1

    @Argument(help: "Input file.")
    var input: String

    func validate() throws {
        if repetitions < 1 { throw ValidationError("--repeat must be at least 1") }
    }

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
        if decoder == .swift, coding != .zstd, coding != .dcz {
            throw CLIError("\(input): --decoder swift decodes zstd and dcz only (no pure-Swift \(coding) decoder); use --decoder c")
        }
        let dictionaryBytes = decoder == .swift ? dictionary?.bytes : nil  // read once, outside the timed loop
        var decoded: [UInt8] = []
        let clock = ContinuousClock()
        let start = clock.now
        for _ in 0..<max(repetitions, 1) {
            decoded = try decode(body, coding: coding, dictionary: dictionary, dictionaryBytes: dictionaryBytes)
        }
        let elapsed = clock.now - start
        if repetitions > 1 {
            let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) * 1e-18
            let perRun = seconds / Double(repetitions)
            FileHandle.standardError.write(Data(String(
                format: "decompress %@ (%@ decoder): %d runs, %.3f ms/run, %.1f MB/s\n", coding.rawValue,
                decoder.rawValue, repetitions, perRun * 1000, Double(decoded.count) / perRun / 1e6).utf8))
        }
        try CLIOutputFile.write(decoded, to: output)
    }

    private func decode(
        _ body: [UInt8], coding: ContentCoding, dictionary: CompressionDictionary?, dictionaryBytes: [UInt8]?
    ) throws -> [UInt8] {
        let limits = DecodeLimits(maxOutput: maxOutput, maxWindowLog: maxWindowLog)
        guard decoder == .swift else {
            do {
                return try coding.decode(body, dictionary: dictionary, limits: limits)
            } catch let error as CodecError {
                throw CLIError("\(input): \(coding): \(error)")
            }
        }
        let windowLog = min(
            maxWindowLog ?? DecodeLimits.standardMaxWindowLog(for: coding, dictionarySize: dictionary?.count ?? 0), 40)
        let swiftLimits = ZstdDecodeLimits(maxOutputBytes: limits.maxOutput, maxWindowBytes: 1 << max(windowLog, 0))
        do {
            if let dictionary, let dictionaryBytes {
                return try PureDCZ.decode(
                    body, dictionary: dictionaryBytes, dictionaryHash: dictionary.hash.bytes, limits: swiftLimits)
            }
            return try PureZstd.decompress(body, limits: swiftLimits)
        } catch {
            throw CLIError("\(input): \(coding) (swift decoder): \(error)")
        }
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

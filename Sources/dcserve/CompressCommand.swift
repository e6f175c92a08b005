import ArgumentParser
import DictionaryCodec
import Foundation

/// `dcserve compress`: one file into a dcz/dcb/zstd/br/gzip body.
struct CompressCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "compress",
        abstract: "Compress a file as dcz, dcb, zstd, br or gzip.",
        discussion: """
            dcz and dcb need --dictionary: the output starts with the dictionary's SHA-256 header \
            (40 bytes for dcz, 36 for dcb) exactly as a server sends it. Default levels are the \
            precompressed ones: dcz 19, dcb 11, zstd 19, br 11, gzip 6 (the server uses dcz/zstd 3 \
            and dcb/br 5 on the fly). dcb quality below 5 is raised to 5, because brotli ignores a \
            dictionary below 5. The output (-o FILE) replaces a regular file atomically, is written through to a device or FIFO, or goes to standard output with -o -.

            Example: dcserve compress --encoding dcz --dictionary app.v1.js app.v2.js -o app.v2.js.dcz
            """
    )

    @Option(name: .shortAndLong, help: "Output coding: dcz, dcb, zstd, br or gzip.")
    var encoding: ContentCoding

    @Option(name: .shortAndLong, help: "Dictionary file (required for dcz and dcb).")
    var dictionary: String?

    @Option(name: .shortAndLong, help: "Compression level (zstd/dcz ...22, negative = faster; br 0...11; dcb 5...11; gzip 0...9).")
    var level: Int?

    @Option(name: .shortAndLong, help: "Output file (- for standard output).")
    var output: String

    @Option(name: .customLong("repeat"), help: ArgumentHelp(
        "Benchmark: compress the input N times in this process (dictionary prepared once, as in the server) and report ms/run and MB/s on stderr.",
        valueName: "N"))
    var repetitions: Int = 1

    @Argument(help: "Input file.")
    var input: String

    func validate() throws {
        if encoding == .identity { throw ValidationError("--encoding must be dcz, dcb, zstd, br or gzip") }
        if encoding.usesDictionary && dictionary == nil {
            throw ValidationError("\(encoding) needs --dictionary FILE")
        }
        if !encoding.usesDictionary && dictionary != nil {
            throw ValidationError("--dictionary is only used with dcz and dcb, not \(encoding)")
        }
        if let level, encoding != .dcb, !encoding.levelRange.contains(level) {
            throw ValidationError("--level \(level) is outside \(encoding)'s range \(encoding.levelRange)")
        }
        if let level, encoding == .dcb, level > encoding.levelRange.upperBound || level < 0 {
            throw ValidationError("--level \(level) is outside dcb's range 0...11 (values below 5 become 5)")
        }
        if repetitions < 1 { throw ValidationError("--repeat must be at least 1") }
    }

    func run() throws {
        let data = try CLIFile.read(input)
        let dictionary = try self.dictionary.map(CLIFile.dictionary)
        let requested = level ?? encoding.defaultLevel(.precompressed)
        let level = encoding.effectiveLevel(requested)
        if level != requested {
            FileHandle.standardError.write(Data("note: \(encoding) level \(requested) raised to \(level)\n".utf8))
        }
        var body: [UInt8] = []
        let clock = ContinuousClock()
        let start = clock.now
        for _ in 0..<repetitions {
            do {
                body = try encoding.encode(data, dictionary: dictionary, level: level)
            } catch let error as CodecError {
                throw CLIError("\(input): \(error)")
            }
        }
        let elapsed = clock.now - start
        try CLIOutputFile.write(body, to: output)
        if repetitions > 1 {
            let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) * 1e-18
            let perRun = seconds / Double(repetitions)
            let speed = Double(data.count) / perRun / 1e6
            FileHandle.standardError.write(Data(String(
                format: "compress %@ level %d: %d runs, %.3f ms/run, %.1f MB/s\n",
                encoding.rawValue, level, repetitions, perRun * 1000, speed).utf8))
        }
        var summary = "\(input): \(data.count) bytes -> \(output): \(body.count) bytes (\(encoding), level \(level)"
        if let dictionary { summary += ", dictionary \(dictionary.hash.hex)" }
        // With `-o -` the body is on standard output: the summary goes to standard error.
        if output == "-" {
            FileHandle.standardError.write(Data((summary + ")\n").utf8))
        } else {
            print(summary + ")")
        }
    }
}

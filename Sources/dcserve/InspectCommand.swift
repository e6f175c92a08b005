import ArgumentParser
import DictionaryCodec
import Foundation

/// `dcserve inspect FILE`: what a compressed body's headers say, without decoding it.
struct InspectCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "inspect",
        abstract: "Show a compressed body's coding, dictionary hash, window size and content size.",
        discussion: "dcz, dcb, zstd and gzip are recognised by their magic; pass --encoding br for plain brotli."
    )

    @Option(name: .shortAndLong, help: "Treat a body without a recognised magic as this coding (br).")
    var encoding: ContentCoding?

    @Argument(help: "The compressed file.")
    var file: String

    func run() throws {
        let body = try CLIFile.read(file)
        let info: CompressedBodyInfo
        do { info = try CompressedBodyInfo.inspect(body, hint: encoding) } catch let error as CodecError {
            throw CLIError("\(file): \(error)")
        }
        print("coding: \(info.coding)")
        print("size: \(body.count) bytes")
        if let hash = info.dictionaryHash {
            print("header: \(DictionaryFrameHeader.length(of: info.coding)) bytes")
            print("dictionary: \(hash.hex)")
            print("available-dictionary: \(hash.structuredFieldBinary)")
        }
        if let window = info.windowSize {
            print("window: \(window) bytes (\(Self.human(window)))")
        }
        print("content size: " + (info.contentSize.map { "\($0) bytes" + (info.coding == .gzip ? " (mod 2^32)" : "") } ?? "unknown"))
        if let checksum = info.hasChecksum { print("checksum: \(checksum ? "yes" : "no")") }
    }

    static func human(_ bytes: UInt64) -> String {
        if bytes >= 1 << 20 && bytes % (1 << 20) == 0 { return "\(bytes >> 20) MiB" }
        if bytes >= 1 << 10 && bytes % (1 << 10) == 0 { return "\(bytes >> 10) KiB" }
        return String(format: "%.1f KiB", Double(bytes) / 1024)
    }
}

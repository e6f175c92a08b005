import ArgumentParser
import DictionaryCodec
import Foundation

/// `dcserve hash FILE`: the dictionary identity of a file.
struct HashCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "hash",
        abstract: "Print a file's SHA-256 and the Available-Dictionary header a client would send for it."
    )

    @Argument(help: "The dictionary file.")
    var file: String

    func run() throws {
        let hash = try CLIFile.hash(of: file)
        print(hash.hex)
        print("Available-Dictionary: \(hash.structuredFieldBinary)")
    }
}

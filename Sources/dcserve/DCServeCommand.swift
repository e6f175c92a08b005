import ArgumentParser
import DCServe
import DictionaryCodec

/// The `dcserve` command line: serve · train · compress · decompress · hash · inspect.
@main
struct DCServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dcserve",
        abstract: "A shared-dictionary compression HTTP server (RFC 9842: dcb and dcz).",
        version: versionText,
        subcommands: [
            ServeCommand.self,
            TrainCommand.self,
            CompressCommand.self,
            DecompressCommand.self,
            HashCommand.self,
            InspectCommand.self,
            FetchCommand.self,
            LabCommand.self,
            EstimateCommand.self,
        ]
    )

    static var versionText: String {
        """
        dcserve \(DCServeVersion.string)
        zstd \(LibraryVersions.zstd)
        brotli \(LibraryVersions.brotli)
        \(LibraryVersions.openSSL)
        """
    }
}

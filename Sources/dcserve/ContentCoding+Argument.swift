import ArgumentParser
import DictionaryCodec

extension ContentCoding: ExpressibleByArgument {
    public init?(argument: String) { self.init(token: argument) }

    public static var allValueStrings: [String] {
        [ContentCoding.dcz, .dcb, .zstd, .br, .gzip].map(\.rawValue)
    }
}

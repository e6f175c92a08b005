import DictionaryCodecTypes

/// The decoders a ``DictionaryClient`` uses, and so the codings it advertises. A value type,
/// thread-safe.
///
/// The first decoder listing a coding decodes it. ``plainCodings`` are offered on every request;
/// ``dictionaryCodings`` (dcb, dcz) only on requests that name a dictionary.
public struct ResponseDecoders: Sendable {
    public let decoders: [any ResponseDecoding]

    public init(_ decoders: [any ResponseDecoding]) { self.decoders = decoders }

    /// dcz and zstd in pure Swift (``PortableZstdDecoder``): what every platform can build. dcb needs
    /// a libbrotli-backed decoder, which an app without one does not advertise.
    public static var portable: ResponseDecoders { ResponseDecoders([PortableZstdDecoder()]) }

    /// Every coding some decoder handles, in order of first appearance, without `identity`.
    public var codings: [ContentCoding] {
        var seen: [ContentCoding] = []
        for coding in decoders.flatMap(\.codings) where coding != .identity && !seen.contains(coding) { seen.append(coding) }
        return seen
    }

    /// Codings without a dictionary (br, zstd, gzip, …), offered on every request.
    public var plainCodings: [ContentCoding] { codings.filter { !$0.usesDictionary } }

    /// dcb and/or dcz, offered only with a dictionary.
    public var dictionaryCodings: [ContentCoding] { codings.filter(\.usesDictionary) }

    /// The decoder for `coding`, nil when none handles it.
    public func decoder(for coding: ContentCoding) -> (any ResponseDecoding)? {
        decoders.first { $0.codings.contains(coding) }
    }
}

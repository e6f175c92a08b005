/// Which requests go where (`routes.names` lists the names, `routes.<name>.prefix` / `.upstream`).
/// The longest `prefix` that begins the request path wins; no route at all sends everything to the
/// static site.
public struct Route: Sendable, Equatable {
    public var name: String
    /// Path prefix, starting with `/` (`"/api/"`, `"/"`). Compared byte for byte with the request path.
    public var prefix: String
    /// Name of an entry of `DCServeConfiguration.upstreams`; nil = the static site.
    public var upstream: String?

    public init(name: String, prefix: String, upstream: String?) {
        self.name = name
        self.prefix = prefix
        self.upstream = upstream
    }
}

/// The settings of a history rule (`dictionaries.<rule>.history.*`): per conversation
/// (the value of the rule's `:group` in `match`) and partition, a window of recent response bodies
/// becomes a raw dictionary, rebuilt as content arrives and offered with `Link`.
///
/// A plain value; the defaults are the documented ones (README "History dictionaries").
public struct HistoryDictionarySettings: Sendable, Equatable {
    /// Largest dictionary built, bytes (`history.maxBytes`). 16 KiB: larger dictionaries gain nothing
    /// on chat responses (bench/history), while every rebuild's delta-coded download grows with them
    /// (and bodies up to 16 KiB get the smaller of dcb and dcz, ``SmallBodyCodingComparison``).
    public var maxDictionaryBytes = 16 << 10
    /// Recent distinct bodies kept per (group, partition), bytes (`history.windowBytes`); ≥ maxBytes.
    public var windowBytes = 64 << 10
    /// Build the group's first dictionary once this many bytes of content arrived
    /// (`history.firstBuildBytes`): early (one response is enough), since most of the gain is the
    /// responses' common structure, which the first response already shows.
    public var firstBuildBytes = 1 << 10
    /// Rebuild once this many bytes of new content arrived since the last build (`history.rebuildBytes`).
    /// Large on purpose: most of the gain is the responses' structure, which the first dictionary
    /// already has, while every rebuild costs each client a delta-coded download of about the new
    /// content's compressed size — bench/history (chat text): a rebuild after 64 KiB cost ~0.04x
    /// br-11's bytes in downloads and saved ~0.01x in message fetches.
    public var rebuildBytes = 256 << 10
    /// Rebuild when new content arrived and the current dictionary is this old (`history.rebuildSeconds`).
    public var rebuildSeconds = 600
    /// How long clients may use a dictionary, and the server accepts it (`history.lifetimeSeconds`):
    /// its `Cache-Control: max-age` counts down to this from the build.
    public var lifetimeSeconds = 3600
    /// Dictionaries accepted per (group, partition), the current one included (`history.keep`);
    /// older ones are refused as if unknown even before they expire.
    public var keep = 4
    /// (group, partition) windows tracked per rule (`history.maxGroups`); the least recently used
    /// one is dropped beyond it (its dictionaries stay usable until they expire).
    public var maxGroups = 1000
    /// Build time allowed per minute and rule, milliseconds (`history.buildMillisecondsPerMinute`);
    /// builds beyond it wait for the next minute.
    public var buildMillisecondsPerMinute = 2000

    public init() {}
}

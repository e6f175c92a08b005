import Foundation

extension DictionaryMetadata {
    /// A record built field by field, for stores that keep records elsewhere than in JSON files
    /// (the PostgreSQL store's rows). `formatVersion` is ``currentFormatVersion``.
    public init(hash: String, match: String, pathPattern: String, matchDestinations: [String], id: String?, rule: String?,
                sourcePath: String?, firstServed: Date, lastServed: Date, maxAge: Int?, expires: Date?, byteSize: Int,
                partition: String? = nil) {
        self.init(formatVersion: Self.currentFormatVersion, hash: hash, match: match, pathPattern: pathPattern,
                  matchDestinations: matchDestinations, id: id, rule: rule, sourcePath: sourcePath, firstServed: firstServed,
                  lastServed: lastServed, maxAge: maxAge, expires: expires, byteSize: byteSize,
                  partition: partition)
    }
}

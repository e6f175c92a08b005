import HTTPTypes
import Locking

/// `DocumentPath.segments(of:)` and the media type of the last segment, remembered per request
/// path: both are pure functions of the path, and clients ask for the same few paths again and again.
///
/// At most `capacity` paths (the memo is emptied when full, so hostile unique paths cost one parse
/// each and bounded memory); paths longer than `maximumPathBytes` are parsed every time.
/// Thread-safe (one `Locked`); parsing runs outside the lock.
final class DocumentPathMemo: Sendable {
    /// A parsed path: its segments, whether it names a directory, and the `Content-Type` field its
    /// last segment's extension gives (`MIMETypes.type(forPath:)`; for the root, that of "index.html").
    struct Parsed: Sendable {
        let segments: [String]
        /// The segments joined with "/" (relative to the root; empty for the root itself).
        let relativePath: String
        let trailingSlash: Bool
        let lastSegmentType: HTTPField
    }

    let capacity: Int
    static let maximumPathBytes = 1024
    private let entries = Locked<[Substring: Result<Parsed, DocumentPath.Failure>]>([:])

    init(capacity: Int = 4096) { self.capacity = capacity }

    /// The parse of `path` (without query), from the memo or computed now.
    func parse(_ path: Substring) -> Result<Parsed, DocumentPath.Failure> {
        guard path.utf8.count <= Self.maximumPathBytes else { return Self.compute(path) }
        if let hit = entries.withLock({ $0[path] }) { return hit }
        let result = Self.compute(path)
        // Keyed by a copy: the request's string is not kept alive by the memo.
        let key = Substring(String(path))
        entries.withLock { memo in
            if memo.count >= capacity { memo.removeAll(keepingCapacity: true) }
            memo[key] = result
        }
        return result
    }

    static func compute(_ path: Substring) -> Result<Parsed, DocumentPath.Failure> {
        do {
            let (segments, trailingSlash) = try DocumentPath.segments(of: path)
            let type = MIMETypes.type(forPath: (segments.last ?? "index.html")[...])
            return .success(Parsed(segments: segments, relativePath: segments.joined(separator: "/"),
                                   trailingSlash: trailingSlash,
                                   lastSegmentType: HTTPField(name: .contentType, value: type)))
        } catch {
            return .failure(error)
        }
    }
}

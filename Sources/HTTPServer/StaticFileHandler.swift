#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import CLinux
import HTTPTypes
import HTTPCore

/// Serves files below a document root: GET and HEAD, `index.html` for directories, MIME types,
/// strong `ETag` (content SHA-256) and `Last-Modified`, conditional requests (304), single byte
/// ranges (206/416), 404, 405 with `Allow`. Files are sent as `ResponseBody.file` (never read whole).
///
/// Traversal: the path is percent-decoded and normalised by `DocumentPath` (no "..", NUL or escape
/// can leave the root; parses are remembered per path by `DocumentPathMemo`), then opened from the
/// root's descriptor with one `openat2` that refuses any symlink (Linux), or, when that fails for
/// another reason than "not found"/"forbidden", by `ConfinedOpen`: component by component from the
/// root's descriptor with `openat(O_NOFOLLOW)`, following a symlink only while its target stays inside
/// the root (symlinks within the root work; ones leaving it give 404). No step resolves a name from
/// `/`, so swapping directories and symlinks during a request can never serve a file outside the root.
///
/// Repeat requests for a small file are answered from memory while nothing on its path changed
/// (`FileSnapshotCache`, kept fresh by inotify); for larger files they reuse the open descriptor while
/// it is provably the same file (`OpenFileCache`).
///
/// Thread-safety: immutable apart from the validator, snapshot, open-file and path caches (mutexes inside);
/// handles requests from any number of event loops at once. Responds synchronously.
public struct StaticFileHandler: HTTPHandler {
    /// The document root as given, and resolved (no symlinks, no trailing slash).
    public let root: String
    public let resolvedRoot: String
    private let rootDescriptor: RootDescriptor
    private let validators = FileValidatorCache()
    private let openFiles = OpenFileCache()
    let snapshots: FileSnapshotCache
    private let parsedPaths = DocumentPathMemo()

    public struct RootError: Error, CustomStringConvertible {
        public let description: String
    }

    /// Opens the document root. Throws `RootError` if it does not exist or is not a directory.
    /// Files up to `snapshotFileBytes` are kept in memory after their first request (0: never).
    public init(root: String, snapshotFileBytes: Int = 32 * 1024) throws {
        guard let resolved = realpath(root, nil) else {
            throw RootError(description: "document root \(root): \(String(cString: strerror(errno)))")
        }
        let path = String(cString: resolved)
        free(resolved)
        let fd = Glibc.open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else {
            throw RootError(description: "document root \(root) is not a readable directory: \(String(cString: strerror(errno)))")
        }
        self.root = root
        self.resolvedRoot = path == "/" ? "" : path
        self.rootDescriptor = RootDescriptor(fd)
        self.snapshots = FileSnapshotCache(maximumFileBytes: snapshotFileBytes)
    }

    public func handle(_ request: HTTPServerRequest, respond: @escaping @Sendable (consuming HTTPServerResponse) -> Void) {
        respond(response(for: request))
    }

    /// How often a request is tried again when its file changed while it was being read.
    static let changedFileAttempts = 4

    /// The response for `request` (synchronous; does file I/O). A file rewritten in place while it is
    /// hashed is opened and read again (up to `changedFileAttempts` times); a file that never holds
    /// still gets a 503 with `Retry-After`, never a 500.
    public func response(for request: HTTPServerRequest) -> HTTPServerResponse {
        for _ in 0..<Self.changedFileAttempts {
            if let response = attempt(request) { return response }
        }
        return .text(.serviceUnavailable, "the file changed while it was read; retry",
                     headerFields: [HTTPField.Name("Retry-After")!: "1"])
    }

    /// One try at answering `request`; nil when the file changed while it was read.
    private func attempt(_ request: HTTPServerRequest) -> HTTPServerResponse? {
        let method = request.method
        guard method == .get || method == .head else {
            return .text(.methodNotAllowed, "method not allowed", headerFields: [.allow: "GET, HEAD"])
        }
        let path = request.pathWithoutQuery
        let parsed: DocumentPathMemo.Parsed
        switch parsedPaths.parse(path) {
        case .success(let p): parsed = p
        case .failure(let error):
            switch error {
            case .malformedEscape: return .text(.badRequest, "malformed percent-encoding in path")
            case .nulByte: return .text(.badRequest, "NUL byte in path")
            case .escapesRoot: return .text(.badRequest, "path escapes the document root")
            case .notOriginForm: return .text(.badRequest, "request target is not a path")
            }
        }
        let isFilePath = !parsed.segments.isEmpty && !parsed.trailingSlash
        if isFilePath {
            if let snapshot = snapshots.lookup(path, root: rootDescriptor.fd, receivedSequence: request.receivedSequence) {
                return fileResponse(snapshot, request: request, contentType: parsed.lastSegmentType)
            }
            if let cached = openFiles.lookup(path, root: rootDescriptor.fd) {
                return fileResponse(OpenedFile(file: cached.file, stat: cached.stat), request: request,
                                    contentType: parsed.lastSegmentType)
            }
        }
        var opened: OpenedFile
        switch open(parsed.segments, relativePath: parsed.relativePath) {
        case .failure(let status): return notFoundOrForbidden(status)
        case .success(let f): opened = f
        }
        if isFilePath && !opened.isDirectory {
            let contentType = parsed.lastSegmentType
            if let snapshot = snapshots.insert(path, relativePath: parsed.relativePath, file: opened.file, stat: opened.stat,
                                               root: rootDescriptor.fd, rootPath: resolvedRoot,
                                               responseFields: { Self.fullResponseFields($0, contentType: contentType) }) {
                return fileResponse(snapshot, request: request, contentType: contentType)
            }
            openFiles.insert(path, relativePath: parsed.relativePath, file: opened.file, stat: opened.stat)
        }
        if opened.isDirectory {
            guard parsed.trailingSlash || parsed.segments.isEmpty && path.hasSuffix("/") else {
                var location = String(path) + "/"
                if let query = request.head.path?.firstIndex(of: "?") { location += request.head.path![query...] }
                return .text(.movedPermanently, "moved to \(location)", headerFields: [.location: location])
            }
            switch openIndex(in: opened, segments: parsed.segments) {
            case .failure(let status): return notFoundOrForbidden(status)
            case .success(let f): opened = f
            }
        }
        return fileResponse(opened, request: request, contentType: parsed.segments.isEmpty || opened.isIndex
                            ? Self.indexContentType : parsed.lastSegmentType)
    }

    private func notFoundOrForbidden(_ status: Int) -> HTTPServerResponse {
        status == 403 ? .text(.forbidden, "forbidden") : .text(.notFound, "not found")
    }

    // MARK: Opening

    private struct OpenedFile {
        let file: OpenFile
        let stat: stat
        var isDirectory: Bool { (stat.st_mode & S_IFMT) == S_IFDIR }
        var isIndex = false
    }

    private enum OpenResult { case success(OpenedFile), failure(Int) }

    /// Fast path: one `openat2` for the whole path, refusing symlinks and escapes in the kernel. Any
    /// outcome but success, "not found" or "forbidden" (a symlink on the way, no openat2) takes the
    /// component-by-component path below, which decides exactly as before.
    private func open(_ segments: [String], relativePath: String) -> OpenResult {
        guard !segments.isEmpty else { return open(segments) }
        let fd = dcserve_openat2_beneath_no_symlinks(rootDescriptor.fd, relativePath, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        if fd >= 0 || errno == ENOENT || errno == EACCES { return finishOpen(fd) }
        return open(segments)
    }

    private func open(_ segments: [String]) -> OpenResult {
        if segments.isEmpty {
            let fd = openat(rootDescriptor.fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)
            return finishOpen(fd)
        }
        return openConfined(segments)
    }

    /// Opens `segments` with ``ConfinedOpen`` (symlinks followed only inside the root).
    private func openConfined(_ segments: [String]) -> OpenResult {
        switch ConfinedOpen.open(segments, root: rootDescriptor.fd, rootPath: resolvedRoot,
                                 flags: O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC) {
        case .opened(let fd): return finishOpen(fd)
        case .failed(let error): return .failure(error == EACCES ? 403 : 404)
        }
    }

    private func openIndex(in directory: OpenedFile, segments: [String]) -> OpenResult {
        let fd = openat(directory.file.descriptor, "index.html", O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        var result: OpenResult
        if fd < 0 && errno == ELOOP {
            result = openConfined(segments + ["index.html"])
        } else {
            result = finishOpen(fd)
        }
        if case .success(var f) = result {
            if f.isDirectory { return .failure(404) }
            f.isIndex = true
            result = .success(f)
        }
        return result
    }

    private func finishOpen(_ fd: Int32) -> OpenResult {
        guard fd >= 0 else { return .failure(errno == EACCES ? 403 : 404) }
        var st = stat()
        guard fstat(fd, &st) == 0 else { close(fd); return .failure(404) }
        let type = st.st_mode & S_IFMT
        guard type == S_IFREG || type == S_IFDIR else { close(fd); return .failure(404) }
        return .success(OpenedFile(file: OpenFile(descriptor: fd, size: Int64(st.st_size)), stat: st))
    }

    // MARK: Response

    private static let indexContentType = HTTPField(name: .contentType, value: MIMETypes.type(forPath: "index.html"))
    private static let acceptRangesBytes = HTTPField(name: .acceptRanges, value: "bytes")

    /// nil when the file changed while its validators were computed (the caller tries again).
    private func fileResponse(_ opened: OpenedFile, request: HTTPServerRequest, contentType: HTTPField) -> HTTPServerResponse? {
        guard let v = validators.validators(descriptor: opened.file.descriptor, stat: opened.stat) else { return nil }
        return fileResponse(size: Int64(opened.stat.st_size), validators: v, request: request, contentType: contentType) {
            .file(FileBody(file: opened.file, range: $0))
        }
    }

    private func fileResponse(_ snapshot: FileSnapshotCache.Snapshot, request: HTTPServerRequest,
                              contentType: HTTPField) -> HTTPServerResponse {
        if !Self.isConditionalOrRange(request.head.headerFields) {
            var response = HTTPServerResponse(head: snapshot.fullResponseHead, body: .bytes(snapshot.bytes))
            response.isContentAddressed = true  // the ETag comes from the file: same (path, ETag), same bytes
            return response
        }
        return fileResponse(size: Int64(snapshot.bytes.count), validators: snapshot.validators, request: request,
                     contentType: contentType) { range in
            range.count == snapshot.bytes.count ? .bytes(snapshot.bytes)
                                                : .bytes(Array(snapshot.bytes[Int(range.lowerBound)..<Int(range.upperBound)]))
        }
    }

    /// The response for a file of `size` bytes with validators `v`: 304, 206, 416 or 200; `body` gives
    /// the body for a byte range.
    private func fileResponse(size: Int64, validators v: FileValidatorCache.Validators, request: HTTPServerRequest,
                              contentType: HTTPField, body: (Range<Int64>) -> ResponseBody) -> HTTPServerResponse {
        let fieldsReq = request.head.headerFields

        // Conditional requests, in RFC 9110 §13.2.2's order: If-Match (else If-Unmodified-Since) first,
        // then If-None-Match (else If-Modified-Since).
        if let im = fieldsReq[values: .ifMatch].nilIfEmpty {
            if !Self.etagListMatchesStrongly(im, v.etag) { return Self.preconditionFailed }
        } else if let ius = fieldsReq[.ifUnmodifiedSince], let since = HTTPDate.parse(ius), v.lastModifiedSeconds > since {
            return Self.preconditionFailed
        }
        if let inm = fieldsReq[values: .ifNoneMatch].nilIfEmpty {
            if Self.etagListMatches(inm, v.etag) { return Self.notModified(v) }
        } else if let ims = fieldsReq[.ifModifiedSince], let since = HTTPDate.parse(ims), v.lastModifiedSeconds <= since {
            return Self.notModified(v)
        }

        var fields = Self.fullResponseFields(v, contentType: contentType)

        if let rangeValue = fieldsReq[.range], request.method == .get {
            let ifRangeOK: Bool
            if let ifRange = fieldsReq[.ifRange] {
                ifRange.hasPrefix("\"") ? (ifRangeOK = ifRange == v.etag)
                                        : (ifRangeOK = HTTPDate.parse(ifRange) == v.lastModifiedSeconds)
            } else {
                ifRangeOK = true
            }
            if ifRangeOK {
                switch ByteRange.parse(rangeValue, size: size) {
                case .satisfiable(let range):
                    fields[.contentRange] = "bytes \(range.lowerBound)-\(range.upperBound - 1)/\(size)"
                    return HTTPServerResponse(status: .partialContent, headerFields: fields, body: body(range))
                case .unsatisfiable:
                    var f = HTTPFields()
                    f[.contentRange] = "bytes */\(size)"
                    return .text(.rangeNotSatisfiable, "range not satisfiable", headerFields: f)
                case .ignored:
                    break
                }
            }
        }
        var response = HTTPServerResponse(status: .ok, headerFields: fields, body: body(0..<size))
        response.isContentAddressed = true  // the ETag comes from the file: same (path, ETag), same bytes
        return response
    }

    /// 412: an `If-Match` or `If-Unmodified-Since` condition is false (RFC 9110 §13.1.1, §13.1.4).
    private static var preconditionFailed: HTTPServerResponse {
        .text(.preconditionFailed, "412 Precondition Failed: the file is not in the state the request names")
    }

    /// A 304 for a file with validators `v`: the validators only.
    private static func notModified(_ v: FileValidatorCache.Validators) -> HTTPServerResponse {
        var fields = HTTPFields()
        fields.append(v.etagField)
        fields.append(v.lastModifiedField)
        return HTTPServerResponse(status: .notModified, headerFields: fields)
    }

    /// The fields of a full (200) file response, in order: ETag, Last-Modified, Content-Type,
    /// Accept-Ranges (a 206 adds Content-Range).
    static func fullResponseFields(_ v: FileValidatorCache.Validators, contentType: HTTPField) -> HTTPFields {
        var fields = HTTPFields()
        fields.reserveCapacity(5)
        fields.append(v.etagField)
        fields.append(v.lastModifiedField)
        fields.append(contentType)
        fields.append(acceptRangesBytes)
        return fields
    }

    /// Whether `fields` hold anything that can make a file response other than a full 200.
    private static func isConditionalOrRange(_ fields: HTTPFields) -> Bool {
        fields.contains { field in
            // By first byte: most names start with neither (a failed String == is a call).
            switch field.name.canonicalName.utf8.first {
            case UInt8(ascii: "i"):
                let name = field.name
                return name == .ifNoneMatch || name == .ifModifiedSince || name == .ifMatch || name == .ifUnmodifiedSince
            case UInt8(ascii: "r"): return field.name == .range
            default: return false
            }
        }
    }

    /// Strong comparison of an If-Match list against our strong ETag (RFC 9110 §13.1.1): "*" matches
    /// (the file exists), a weak tag never does.
    static func etagListMatchesStrongly(_ values: [String], _ etag: String) -> Bool {
        for value in values {
            for member in value.fieldMembers(separatedBy: ",") where member == "*" || member == etag {
                return true
            }
        }
        return false
    }

    /// Weak comparison of an If-None-Match list against our strong ETag ("*" matches anything).
    static func etagListMatches(_ values: [String], _ etag: String) -> Bool {
        for value in values {
            for member in value.fieldMembers(separatedBy: ",") {
                var tag = member
                if tag == "*" { return true }
                if tag.hasPrefix("W/") { tag = tag.dropFirst(2) }
                if tag == etag { return true }
            }
        }
        return false
    }
}

/// Owns the root directory descriptor for the handler's lifetime (never closed: handlers live as long
/// as the server). Immutable, so `Sendable`.
private final class RootDescriptor: Sendable {
    let fd: Int32
    init(_ fd: Int32) { self.fd = fd }
}

/// A single `bytes=` range (RFC 9110 §14.1.2). Multiple ranges and malformed values are ignored
/// (the full representation is sent, as the RFC permits).
public enum ByteRange: Equatable {
    case satisfiable(Range<Int64>)
    case unsatisfiable
    case ignored

    public static func parse(_ value: String, size: Int64) -> ByteRange {
        guard value.hasPrefix("bytes=") else { return .ignored }
        let spec = value.dropFirst(6).trimmingCharacters(in: " \t")
        guard !spec.contains(","), let dash = spec.firstIndex(of: "-") else { return .ignored }
        let first = spec[..<dash], last = spec[spec.index(after: dash)...]
        func number(_ s: Substring) -> Int64? {
            guard !s.isEmpty, s.count <= 18, s.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
            return Int64(s)
        }
        if first.isEmpty {
            guard let suffix = number(last) else { return .ignored }
            guard suffix > 0, size > 0 else { return .unsatisfiable }
            return .satisfiable(max(0, size - suffix)..<size)
        }
        guard let start = number(first) else { return .ignored }
        var end = size - 1
        if !last.isEmpty {
            guard let e = number(last) else { return .ignored }
            guard e >= start else { return .ignored }
            end = min(e, size - 1)
        }
        guard start < size else { return .unsatisfiable }
        return .satisfiable(start..<end + 1)
    }
}

/// O_PATH (Linux): open a directory only to use it as an openat anchor. Not exported by Swift's Glibc.
let linuxOPath: Int32 = 0o10000000

extension Array {
    var nilIfEmpty: Self? { isEmpty ? nil : self }
}

extension StringProtocol {
    func trimmingCharacters(in set: String) -> String {
        let chars = Set(set)
        var s = Substring(self)
        while let f = s.first, chars.contains(f) { s.removeFirst() }
        while let l = s.last, chars.contains(l) { s.removeLast() }
        return String(s)
    }
}

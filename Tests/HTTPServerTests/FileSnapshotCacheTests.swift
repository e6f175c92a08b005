import Foundation
#if canImport(Glibc)
import Glibc
#endif
import HTTPTypes
import Testing
@testable import HTTPServer
import TestSupport

/// StaticFileHandler's in-memory snapshots of small files against a real directory: every kind of
/// change is visible to the very next request (no sleeping: within the 1 s re-check interval only
/// inotify can tell), and ranges and conditionals are answered from the snapshot like from the file.
@Suite("File snapshots: served from memory, never stale")
struct FileSnapshotCacheTests {
    let directory: URL
    let root: URL

    init() throws {
        directory = uniqueTemporaryURL("snapshots")
        root = directory.appendingPathComponent("www")
        try FileManager.default.createDirectory(at: root.appendingPathComponent("a/b"), withIntermediateDirectories: true)
    }

    private func write(_ text: String, _ path: String) throws {
        try Data(text.utf8).write(to: root.appendingPathComponent(path))
    }

    /// Overwrites the file in place (same inode, same size when `text` has the old length).
    private func overwrite(_ text: String, _ path: String) throws {
        let handle = try FileHandle(forWritingTo: root.appendingPathComponent(path))
        try handle.write(contentsOf: Data(text.utf8))
        try handle.close()
    }

    private func get(_ handler: StaticFileHandler, _ path: String, _ fields: HTTPFields = [:],
                     receivedSequence: UInt64 = 0) -> (Int, String, HTTPFields) {
        let request = HTTPServerRequest(head: HTTPRequest(method: .get, scheme: "http", authority: "t", path: path,
                                                          headerFields: fields), receivedSequence: receivedSequence)
        let response = handler.response(for: request)
        let body: [UInt8]
        switch response.body {
        case .bytes(let b): body = b
        case .file(let f): body = (try? f.readAll()) ?? []
        case .stream: body = []
        }
        return (response.head.status.code, String(decoding: body, as: UTF8.self), response.head.headerFields)
    }

    @Test func repeatRequestsComeFromMemoryAndSeeInPlaceWrites() throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        try write("version-1", "a/b/page.txt")
        let handler = try StaticFileHandler(root: root.path)
        #expect(get(handler, "/a/b/page.txt").1 == "version-1")
        #expect(handler.snapshots.count == 1)
        #expect(get(handler, "/a/b/page.txt").1 == "version-1")
        try overwrite("version-2", "a/b/page.txt")  // same size, same inode
        #expect(get(handler, "/a/b/page.txt").1 == "version-2")
        #expect(get(handler, "/a/b/page.txt").1 == "version-2")
    }

    /// Unconditional requests for a kept file share its prebuilt head (so the compression memo can
    /// compare heads in constant time); a changed file gets a new head, and equal heads built
    /// separately are equal but not identical.
    @Test func repeatRequestsShareOneHeadUntilTheFileChanges() throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        try write("version-1", "a/b/page.txt")
        let handler = try StaticFileHandler(root: root.path)
        func head() -> HTTPResponse {
            handler.response(for: HTTPServerRequest(head: HTTPRequest(method: .get, scheme: "http", authority: "t",
                                                                      path: "/a/b/page.txt"))).head
        }
        let first = head(), second = head(), third = head()
        #expect(second.isIdentical(to: third))
        #expect(first == second)
        try overwrite("version-2", "a/b/page.txt")
        let changed = head()
        #expect(!changed.isIdentical(to: third))
        #expect(changed.headerFields[.eTag] != third.headerFields[.eTag])
        let rebuilt = HTTPResponse(status: .ok, headerFields: changed.headerFields)
        #expect(rebuilt == changed && !rebuilt.isIdentical(to: changed))
    }

    /// A request read before another lookup's check began needs no check of its own (and may get the
    /// version that was current when it was read); one read after a change always sees the change.
    @Test func requestsReadBeforeACheckShareIt() throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        try write("version-1", "a/b/page.txt")
        let handler = try StaticFileHandler(root: root.path)
        #expect(get(handler, "/a/b/page.txt").1 == "version-1")
        let readBefore = InputSequence.next()  // a request read now...
        #expect(get(handler, "/a/b/page.txt", receivedSequence: InputSequence.next()).1 == "version-1")  // ...a check after it
        try overwrite("version-2", "a/b/page.txt")
        // Covered by the check above (no poll of its own): still the version it was read against.
        #expect(get(handler, "/a/b/page.txt", receivedSequence: readBefore).1 == "version-1")
        // Read after the change: checks, sees the event, gets the new bytes.
        #expect(get(handler, "/a/b/page.txt", receivedSequence: InputSequence.next()).1 == "version-2")
        #expect(get(handler, "/a/b/page.txt", receivedSequence: readBefore).1 == "version-2")
    }

    @Test func replacementsDeletionsAndDirectorySwapsAreSeen() throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        try write("one", "a/b/x.txt")
        let handler = try StaticFileHandler(root: root.path)
        #expect(get(handler, "/a/b/x.txt").1 == "one")
        // Replaced by rename (how deploys and editors write).
        try write("two", "a/b/x.tmp")
        #expect(rename(root.appendingPathComponent("a/b/x.tmp").path, root.appendingPathComponent("a/b/x.txt").path) == 0)
        #expect(get(handler, "/a/b/x.txt").1 == "two")
        #expect(get(handler, "/a/b/x.txt").1 == "two")
        // An intermediate directory swapped for another one.
        try FileManager.default.moveItem(at: root.appendingPathComponent("a"), to: root.appendingPathComponent("old-a"))
        try FileManager.default.createDirectory(at: root.appendingPathComponent("a/b"), withIntermediateDirectories: true)
        try write("three", "a/b/x.txt")
        #expect(get(handler, "/a/b/x.txt").1 == "three")
        #expect(get(handler, "/a/b/x.txt").1 == "three")
        // Deleted.
        try FileManager.default.removeItem(at: root.appendingPathComponent("a/b/x.txt"))
        #expect(get(handler, "/a/b/x.txt").0 == 404)
    }

    @Test func writesThroughAHardLinkOutsideTheRootAreSeen() throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        try write("inside", "linked.txt")
        let outside = directory.appendingPathComponent("elsewhere.txt")
        try FileManager.default.linkItem(at: root.appendingPathComponent("linked.txt"), to: outside)
        let handler = try StaticFileHandler(root: root.path)
        #expect(get(handler, "/linked.txt").1 == "inside")
        #expect(get(handler, "/linked.txt").1 == "inside")
        let handle = try FileHandle(forWritingTo: outside)
        try handle.write(contentsOf: Data("INSIDE".utf8))
        try handle.close()
        #expect(get(handler, "/linked.txt").1 == "INSIDE")
    }

    @Test func rangesAndConditionalsFromASnapshot() throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        try write("0123456789", "digits.txt")
        let handler = try StaticFileHandler(root: root.path)
        let first = get(handler, "/digits.txt")
        #expect(handler.snapshots.count == 1)
        let etag = try #require(first.2[.eTag])
        let ranged = get(handler, "/digits.txt", [.range: "bytes=2-4"])
        #expect(ranged.0 == 206 && ranged.1 == "234" && ranged.2[.contentRange] == "bytes 2-4/10")
        #expect(get(handler, "/digits.txt", [.range: "bytes=20-"]).0 == 416)
        #expect(get(handler, "/digits.txt", [.ifNoneMatch: etag]).0 == 304)
        #expect(get(handler, "/digits.txt").2[.eTag] == etag)
    }

    @Test func largeFilesAreNotKeptInMemory() throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        try write(String(repeating: "x", count: 5000), "big.txt")
        let handler = try StaticFileHandler(root: root.path, snapshotFileBytes: 4096)
        #expect(get(handler, "/big.txt").1.count == 5000)
        #expect(get(handler, "/big.txt").1.count == 5000)
        #expect(handler.snapshots.count == 0)
    }
}

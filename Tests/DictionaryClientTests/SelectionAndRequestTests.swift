import DictionaryClient
import DictionaryClientSystemCodecs
import DictionaryCodec
import DictionaryTransport
import Foundation
import HTTPTypes
import Testing
import TestSupport

@Suite struct SelectionTests {
    let clock = TestClock()

    @Test func onlyTheSameOriginIsNamed() throws {
        let client = try memoryClient(clock)
        try register(client, url: "https://example.com/a/d", body: bytes("d"), useAsDictionary: #"match="/a/*""#)
        #expect(try client.prepare(url: "https://example.com/a/x").dictionary != nil)
        #expect(try client.prepare(url: "https://example.com:8443/a/x").dictionary == nil)
        #expect(try client.prepare(url: "https://www.example.com/a/x").dictionary == nil)
        #expect(try client.prepare(url: "http://example.com/a/x").dictionary == nil)
    }

    @Test func matchDestNamingTheDestinationBeatsEmptyEvenWhenShorter() throws {
        let client = try memoryClient(clock)
        try register(client, url: "https://example.com/a/b/long", body: bytes("long"), useAsDictionary: #"match="/a/b/*""#)
        try register(client, url: "https://example.com/a/short", body: bytes("script"),
                     useAsDictionary: #"match="/a/*", match-dest=("script")"#)
        let script = try client.prepare(url: "https://example.com/a/b/c.js", destination: "script")
        #expect(script.dictionary?.hash == SHA256.hash(bytes("script")))
        // Another destination cannot use the script-only dictionary: the longer general match wins.
        let doc = try client.prepare(url: "https://example.com/a/b/c.js", destination: "document")
        #expect(doc.dictionary?.hash == SHA256.hash(bytes("long")))
        #expect(try client.prepare(url: "https://example.com/a/c.js", destination: "").dictionary == nil)
    }

    @Test func longestMatchWins() throws {
        let client = try memoryClient(clock)
        try register(client, url: "https://example.com/x", body: bytes("all"), useAsDictionary: #"match="/*""#)
        clock.advance(1)
        try register(client, url: "https://example.com/static/x", body: bytes("static"), useAsDictionary: #"match="/static/*""#)
        clock.advance(1)
        try register(client, url: "https://example.com/y", body: bytes("newer-but-short"), useAsDictionary: #"match="/s*""#)
        let r = try client.prepare(url: "https://example.com/static/app.js")
        #expect(r.dictionary?.hash == SHA256.hash(bytes("static")))
        #expect(r.candidateCount == 3)
    }

    @Test func equalLengthMostRecentlyFetchedWins() throws {
        let client = try memoryClient(clock)
        try register(client, url: "https://example.com/a", body: bytes("old"), useAsDictionary: #"match="/p/*""#)
        clock.advance(5)
        try register(client, url: "https://example.com/b", body: bytes("new"), useAsDictionary: #"match="/*/x""#)
        #expect(try client.prepare(url: "https://example.com/p/x").dictionary?.hash == SHA256.hash(bytes("new")))
    }

    @Test func expiredDictionariesAreNeverNamed() throws {
        let client = try memoryClient(clock)
        try register(client, url: "https://example.com/a", body: bytes("short"), useAsDictionary: #"match="/p/*/x""#, cacheControl: "max-age=10")
        try register(client, url: "https://example.com/b", body: bytes("long-lived"), useAsDictionary: #"match="/p/*""#, cacheControl: "max-age=1000")
        #expect(try client.prepare(url: "https://example.com/p/q/x").dictionary?.hash == SHA256.hash(bytes("short")))
        clock.advance(10)
        #expect(try client.prepare(url: "https://example.com/p/q/x").dictionary?.hash == SHA256.hash(bytes("long-lived")))
        clock.advance(1000)
        let none = try client.prepare(url: "https://example.com/p/q/x")
        #expect(none.dictionary == nil)
        #expect(none.fields[.availableDictionary] == nil)
        #expect(client.store.removeExpired(now: clock.now) == 2)
    }

    @Test func queryIsNotPartOfTheMatch() throws {
        let client = try memoryClient(clock)
        try register(client, url: "https://example.com/api/v1", body: bytes("d"), useAsDictionary: #"match="/api/*""#)
        #expect(try client.prepare(url: "https://example.com/api/items?page=2").dictionary != nil)
    }
}

@Suite struct RequestDecorationTests {
    let clock = TestClock()

    @Test func matchingRequestCarriesOneAvailableDictionaryIdAndDictionaryCodings() throws {
        let client = try memoryClient(clock)
        try register(client, url: "https://example.com/a", body: bytes("This is a test dictionary.\n"),
                     useAsDictionary: #"match="/*", id="dict \"1\"""#)
        let r = try client.prepare(url: "https://example.com/page")
        #expect(r.fields[values: .availableDictionary] == [":U5abz16WDg7b8KS93msLPpOB4Vbef1uRzoORYkJw9BY=:"])
        #expect(AvailableDictionary.parse(r.fields).value?.hash == DictionaryHash(hex: "53969bcf5e960e0edbf0a4bdde6b0b3e9381e156de7f5b91ce8391624270f416"))
        #expect(r.fields[.dictionaryID] == #""dict \"1\"""#)
        #expect(DictionaryID.parse(r.fields).value?.value == #"dict "1""#)
        #expect(r.fields[.acceptEncoding] == "gzip, br, zstd, dcb, dcz")
    }

    @Test func noIdMeansNoDictionaryID() throws {
        let client = try memoryClient(clock)
        try register(client, url: "https://example.com/a", body: bytes("d"), useAsDictionary: #"match="/*", id="""#)
        let r = try client.prepare(url: "https://example.com/page")
        #expect(r.fields[.availableDictionary] != nil)
        #expect(r.fields[.dictionaryID] == nil)
    }

    @Test func withoutADictionaryNoDictionaryCodingsAreOfferedEvenIfTheCallerAskedForThem() throws {
        let client = try memoryClient(clock)
        let r = try client.prepare(url: "https://example.com/page", fields: fields(
            ("accept-encoding", "br, dcb, DCZ;q=0.5, gzip"), ("available-dictionary", ":AAAA:"), ("dictionary-id", "\"x\"")))
        #expect(r.fields[.acceptEncoding] == "br, gzip")
        #expect(r.fields[.availableDictionary] == nil)
        #expect(r.fields[.dictionaryID] == nil)
        #expect(r.dictionary == nil)
    }

    @Test func insecureContextNeverAdvertises() throws {
        let clock = TestClock()
        let store = try ClientDictionaryStore(location: .memory)
        let client = DictionaryClient(store: store, decoders: .systemLibraries, now: clock.function)
        // A dictionary recorded for a plain-HTTP remote origin (e.g. by an older version) is not used.
        try store.insert(StoredDictionary(
            partition: "", origin: "http://example.com", sourceURL: "http://example.com/d", match: "/*",
            matchDestinations: [], id: nil, hashHex: SHA256.hash(bytes("d")).hex, size: 1,
            fetchedAt: clock.now, expiresAt: clock.now + 100, lastUsedAt: clock.now), body: bytes("d"))
        let r = try client.prepare(url: "http://example.com/page")
        #expect(r.dictionary == nil)
        #expect(r.reason.contains("secure context"))
    }

    @Test func invalidURLIsATypedError() throws {
        let client = try memoryClient(clock)
        #expect(throws: DictionaryClientError.invalidURL("ftp://example.com/")) { try client.prepare(url: "ftp://example.com/") }
        #expect(throws: DictionaryClientError.self) { try client.prepare(url: "https://user@example.com/") }
    }
}

import DictionaryClient
import Testing

/// `Link` targets resolved against the page's URL (RFC 3986 §5.2), dot segments removed (§5.2.4).
@Suite struct LinkResolutionTests {
    let page = ClientRequestTarget(url: "https://example.com/a/b/page?x=1")!

    @Test func referencesResolveWithoutDotSegments() {
        let cases: [(String, String)] = [
            ("../d/x", "https://example.com/a/d/x"),
            ("./y/../z", "https://example.com/a/b/z"),
            ("/e/./f/%2e%2E/g", "https://example.com/e/g"),
            ("/a/b/c/..", "https://example.com/a/b/"),
            ("../../../../up", "https://example.com/up"),
            ("d.dict?v=2", "https://example.com/a/b/d.dict?v=2"),
            ("?v=3", "https://example.com/a/b/page?v=3"),
            ("//example.com/x/../y", "https://example.com/y"),
            ("https://example.com/p/./q/../r#frag", "https://example.com/p/r"),
            ("..%2Fetc", "https://example.com/a/b/..%2Fetc"),
        ]
        for (reference, expected) in cases {
            #expect(page.resolve(reference)?.description == expected, "\(reference)")
        }
        #expect(page.resolve("mailto:x@example.com") == nil)
    }

    @Test func removeDotSegmentsFollowsTheRFCExamples() {
        // RFC 3986 §5.2.4's own examples.
        #expect(ClientRequestTarget.removingDotSegments("/a/b/c/./../../g") == "/a/g")
        #expect(ClientRequestTarget.removingDotSegments("/mid/content=5/../6") == "/mid/6")
        #expect(ClientRequestTarget.removingDotSegments("/") == "/")
        #expect(ClientRequestTarget.removingDotSegments("/..") == "/")
        #expect(ClientRequestTarget.removingDotSegments("/a//b/") == "/a//b/")
    }
}

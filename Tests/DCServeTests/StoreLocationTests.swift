@testable import DCServe
import Testing

/// `StoreLocation.contains`: a store inside the document root is found whatever the directory names,
/// compared byte-wise as the file system names them.
@Suite struct StoreLocationTests {
    @Test func containmentIsByPathComponentsAndBytes() {
        #expect(StoreLocation.contains("/srv/www", "/srv/www"))
        #expect(StoreLocation.contains("/srv/www/", "/srv/www/store"))
        #expect(StoreLocation.contains("/srv/www", "/srv/www/a/b"))
        #expect(!StoreLocation.contains("/srv/www", "/srv/wwwstore"))
        #expect(!StoreLocation.contains("/srv/www", "/srv"))
        #expect(StoreLocation.contains("/", "/anything"))
        // A directory whose name starts with a combining mark: "/" + U+0363 is one Character, so
        // String.hasPrefix("/srv/www/") said no and the store was served publicly without a word.
        #expect(StoreLocation.contains("/srv/www", "/srv/www/\u{0363}store"))
        // Canonically equivalent but different bytes: different directories on Linux.
        #expect(!StoreLocation.contains("/srv/caf\u{00E9}", "/srv/cafe\u{0301}/store"))
    }
}

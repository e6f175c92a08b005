@testable import HTTPCore
import Testing

/// `HTTPFieldSyntax`'s character classes against their grammar, for every byte value.
@Suite struct HTTPFieldSyntaxTests {
    @Test func tokenBytesAreExactlyTheTchars() {
        let specials = Set("!#$%&'*+-.^_`|~".utf8)
        for value in 0...255 {
            let b = UInt8(value)
            let isAlpha = (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A)
            let isDigit = b >= 0x30 && b <= 0x39
            #expect(HTTPFieldSyntax.isTokenByte(b) == (isAlpha || isDigit || specials.contains(b)), "byte \(value)")
        }
    }
}

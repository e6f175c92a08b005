/// The directives of one `Cache-Control` field value (RFC 9111 §5.2: comma-separated
/// `name[=argument]`, names case-insensitive, arguments tokens or quoted strings): the one parser of
/// the field in this package. Each reader decides on top of it which directives it honours, which
/// occurrence of a repeated one wins and what an invalid argument means.
///
/// The reading, byte by byte (see ``FieldValueMembers``): members end at `,` (a comma inside a quoted
/// string ends one too), empty members are skipped, a member's name and argument are split at its first
/// `=` without surrounding OWS. As ``fieldPair(separatedBy:omittingEmpty:trimmingOWS:)`` reads it, an
/// empty text before `=` is skipped: `=private` reads as `private`, so a malformed member errs towards
/// the restrictive directive it spells. A lazy sequence of substrings of the value: no array, no copy.
/// Pure; a value type.
package struct CacheControlDirectives: Sequence, IteratorProtocol {
    /// One `name[=argument]` member.
    package struct Directive {
        /// The name as received (any case).
        package let name: Substring
        /// The text after the first `=`, quotes kept; nil without `=` or with nothing after it.
        package let argument: Substring?

        /// Whether the name is `lowercaseName` (lower-case ASCII) ignoring ASCII case.
        package func isNamed(_ lowercaseName: String) -> Bool {
            name.utf8.count == lowercaseName.utf8.count
                && zip(name.utf8, lowercaseName.utf8).allSatisfy { ($0 >= 0x41 && $0 <= 0x5A ? $0 | 0x20 : $0) == $1 }
        }

        /// The argument without the double quotes of a quoted string (`"60"` → `60`); as received otherwise.
        package var unquotedArgument: Substring? {
            guard let argument, argument.utf8.count >= 2, argument.utf8.first == 0x22, argument.utf8.last == 0x22 else {
                return argument
            }
            let bytes = argument.utf8
            return argument[bytes.index(after: bytes.startIndex)..<bytes.index(before: bytes.endIndex)]
        }
    }

    private var members: FieldValueMembers

    package init<S: StringProtocol>(_ value: S) where S.SubSequence == Substring {
        members = value.fieldMembers(separatedBy: ",")
    }

    package mutating func next() -> Directive? {
        guard let member = members.next() else { return nil }
        let pair = member.fieldPair(separatedBy: "=")
        return Directive(name: pair.first ?? "", argument: pair.second)
    }
}

extension StringProtocol where SubSequence == Substring {
    /// This value read as a `Cache-Control` field value (see ``CacheControlDirectives``).
    package var cacheControlDirectives: CacheControlDirectives { CacheControlDirectives(self) }
}

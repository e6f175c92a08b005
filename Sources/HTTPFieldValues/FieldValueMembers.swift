/// The members of an HTTP field value split at an ASCII separator byte (`,` of a list, `;` of
/// parameters, `=` of `name=value`), as a recipient reads them on the wire (RFC 9110 §5.6.1).
///
/// `String.split(separator: ",")` splits at Characters: in `gzip,\u{0301}br` the comma and the
/// combining mark after it are one grapheme cluster, so that comma is not a separator to it, while
/// every HTTP recipient splits there. These members start and end exactly at separator bytes.
///
/// A lazy sequence of substrings of the value (no array, no copy). Quotes are not special: a
/// separator inside a quoted string splits like any other (what the callers did before).
package struct FieldValueMembers: Sequence, IteratorProtocol {
    private let value: Substring
    private let separator: UInt8
    private let omittingEmpty: Bool
    private let trimming: Bool
    private var splitsLeft: Int
    /// Where the next member starts; nil after the last.
    private var position: Substring.Index?

    package init(_ value: Substring, separator: Unicode.Scalar, maxSplits: Int, omittingEmpty: Bool, trimmingOWS: Bool) {
        precondition(separator.isASCII && maxSplits >= 0, "an ASCII separator and a non-negative maxSplits")
        self.value = value
        self.separator = UInt8(ascii: separator)
        self.omittingEmpty = omittingEmpty
        self.trimming = trimmingOWS
        self.splitsLeft = maxSplits
        self.position = value.startIndex
    }

    package mutating func next() -> Substring? {
        let bytes = value.utf8
        while let start = position {
            var end = start
            if splitsLeft > 0 {
                while end < bytes.endIndex && bytes[end] != separator { bytes.formIndex(after: &end) }
            } else {
                end = bytes.endIndex
            }
            position = end < bytes.endIndex ? bytes.index(after: end) : nil
            // As `split(maxSplits:omittingEmptySubsequences:)`: emptiness is judged before trimming
            // (a member of spaces only is returned, as ""), and only returned members count as splits.
            if omittingEmpty && start == end { continue }
            if position != nil { splitsLeft -= 1 }
            return trimming ? value[start..<end].trimmingOWS() : value[start..<end]
        }
        return nil
    }

    /// The last member (reads them all).
    package var last: Substring? {
        var members = self
        var last: Substring?
        while let member = members.next() { last = member }
        return last
    }
}

extension StringProtocol where SubSequence == Substring {
    /// The members of this field value between `separator` bytes (an ASCII character), each without
    /// leading and trailing OWS unless `trimmingOWS` is false. As `split(separator:maxSplits:
    /// omittingEmptySubsequences:)` followed by ``trimmingOWS()``, but on bytes.
    package func fieldMembers(
        separatedBy separator: Unicode.Scalar, maxSplits: Int = .max, omittingEmpty: Bool = true, trimmingOWS: Bool = true
    ) -> FieldValueMembers {
        FieldValueMembers(self[...], separator: separator, maxSplits: maxSplits, omittingEmpty: omittingEmpty, trimmingOWS: trimmingOWS)
    }

    /// `name` and `value` of a `name=value` member: the first two members of
    /// ``fieldMembers(separatedBy:maxSplits:omittingEmpty:trimmingOWS:)`` with `maxSplits` 1 (nil when
    /// there are fewer; with `omittingEmpty` false the first is never nil).
    package func fieldPair(
        separatedBy separator: Unicode.Scalar, omittingEmpty: Bool = true, trimmingOWS: Bool = true
    ) -> (first: Substring?, second: Substring?) {
        var members = fieldMembers(separatedBy: separator, maxSplits: 1, omittingEmpty: omittingEmpty, trimmingOWS: trimmingOWS)
        let first = members.next()
        return (first, members.next())
    }

    /// Without leading and trailing spaces and tabs (HTTP OWS), trimmed byte by byte: a space followed
    /// by a combining mark is one Character but still a space on the wire.
    package func trimmingOWS() -> Substring {
        let whole = self[...]
        let bytes = whole.utf8
        var start = bytes.startIndex, end = bytes.endIndex
        while start < end && (bytes[start] == 0x20 || bytes[start] == 0x09) { bytes.formIndex(after: &start) }
        while start < end {
            let before = bytes.index(before: end)
            guard bytes[before] == 0x20 || bytes[before] == 0x09 else { break }
            end = before
        }
        return whole[start..<end]
    }
}

import HTTPCore
import HTTPTypes

/// Building the `Vary` value for responses whose encoding may depend on a dictionary (RFC 9842 §6.2).
///
/// Every variant of such a resource — dcb/dcz and the plain ones — carries
/// `Vary: Accept-Encoding, Available-Dictionary` (+ `Dictionary-ID` when it influences the choice).
public enum VaryField {
    /// The names dictionary negotiation depends on.
    public static func dictionaryFieldNames(includingDictionaryID: Bool = Negotiation.dictionaryIDInfluencesChoice) -> [String] {
        includingDictionaryID ? ["Accept-Encoding", "Available-Dictionary", "Dictionary-ID"] : ["Accept-Encoding", "Available-Dictionary"]
    }

    /// Merges `adding` into the existing `Vary` lines: names compared case-insensitively, order kept,
    /// duplicates dropped; an existing `*` stays `*` alone. Lines are split and names compared byte by
    /// byte (ASCII case folding), as recipients read the field: a comma or space followed by a
    /// combining mark is one Character to String but still a separator on the wire.
    public static func merged(existing: [String], adding: [String]) -> String {
        var names: [String] = []
        var seen = Set<[UInt8]>()
        func insert(_ name: some StringProtocol) -> Bool {
            seen.insert(name.utf8.map { $0 >= 0x41 && $0 <= 0x5A ? $0 | 0x20 : $0 }).inserted
        }
        for line in existing {
            for name in line.fieldMembers(separatedBy: ",") {
                guard !name.isEmpty else { continue }
                if name.utf8.elementsEqual("*".utf8) { return "*" }
                if insert(name) { names.append(String(name)) }
            }
        }
        for name in adding where insert(name) { names.append(name) }
        return names.joined(separator: ", ")
    }

    /// Replaces the `Vary` lines of `fields` with one line that also lists the dictionary field names.
    public static func addDictionaryNames(to fields: inout HTTPFields, includingDictionaryID: Bool = Negotiation.dictionaryIDInfluencesChoice) {
        let value = merged(existing: fields[values: .vary], adding: dictionaryFieldNames(includingDictionaryID: includingDictionaryID))
        fields[.vary] = value
    }
}

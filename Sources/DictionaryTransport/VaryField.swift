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
    /// duplicates dropped; an existing `*` stays `*` alone.
    public static func merged(existing: [String], adding: [String]) -> String {
        var names: [String] = []
        var seen = Set<String>()
        for line in existing {
            for raw in line.split(separator: ",") {
                let name = raw.trimmingWhitespace()
                guard !name.isEmpty else { continue }
                if name == "*" { return "*" }
                if seen.insert(name.lowercased()).inserted { names.append(name) }
            }
        }
        for name in adding where seen.insert(name.lowercased()).inserted { names.append(name) }
        return names.joined(separator: ", ")
    }

    /// Replaces the `Vary` lines of `fields` with one line that also lists the dictionary field names.
    public static func addDictionaryNames(to fields: inout HTTPFields, includingDictionaryID: Bool = Negotiation.dictionaryIDInfluencesChoice) {
        let value = merged(existing: fields[values: .vary], adding: dictionaryFieldNames(includingDictionaryID: includingDictionaryID))
        fields[.vary] = value
    }
}

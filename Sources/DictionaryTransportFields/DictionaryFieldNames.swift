import HTTPTypes

/// Field names used by the §9.3.3 gate that swift-http-types does not predefine (it already has
/// `useAsDictionary`, `availableDictionary` and `dictionaryID`).
extension HTTPField.Name {
    /// `Sec-Fetch-Site` (Fetch Metadata).
    public static let secFetchSite = HTTPField.Name("Sec-Fetch-Site")!
    /// `Sec-Fetch-Mode` (Fetch Metadata).
    public static let secFetchMode = HTTPField.Name("Sec-Fetch-Mode")!
    /// `Sec-Fetch-Dest` (Fetch Metadata), compared with `match-dest`.
    public static let secFetchDest = HTTPField.Name("Sec-Fetch-Dest")!
}

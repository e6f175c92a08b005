import HTTPTypes

/// Field names used by RFC 9842 and the §9.3.3 gate that swift-http-types does not predefine.
extension HTTPField.Name {
    /// `Use-As-Dictionary` (response, RFC 9842 §2.1).
    public static let useAsDictionary = HTTPField.Name("Use-As-Dictionary")!
    /// `Available-Dictionary` (request, RFC 9842 §2.2).
    public static let availableDictionary = HTTPField.Name("Available-Dictionary")!
    /// `Dictionary-ID` (request, RFC 9842 §2.3).
    public static let dictionaryID = HTTPField.Name("Dictionary-ID")!
    /// `Sec-Fetch-Site` (Fetch Metadata).
    public static let secFetchSite = HTTPField.Name("Sec-Fetch-Site")!
    /// `Sec-Fetch-Mode` (Fetch Metadata).
    public static let secFetchMode = HTTPField.Name("Sec-Fetch-Mode")!
    /// `Sec-Fetch-Dest` (Fetch Metadata), compared with `match-dest`.
    public static let secFetchDest = HTTPField.Name("Sec-Fetch-Dest")!
}

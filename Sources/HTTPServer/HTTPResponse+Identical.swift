import HTTPTypes

extension HTTPResponse {
    /// True when `self` and `other` are the same bits: the same storage references (status, reason
    /// phrase, fields) and hence the same head. A constant-time fast path before a field-by-field
    /// comparison, for heads shared by reference (a file snapshot's prebuilt head, handed out on every
    /// request). False says nothing: equal heads built separately are not identical.
    public func isIdentical(to other: HTTPResponse) -> Bool {
        withUnsafeBytes(of: self) { a in
            withUnsafeBytes(of: other) { b in a.elementsEqual(b) }
        }
    }
}

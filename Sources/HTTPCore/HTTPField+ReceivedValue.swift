import HTTPTypes

extension HTTPField {
    /// A field as received on the wire: an all-ASCII value becomes a `String` directly (the usual
    /// case, no validation pass of HTTPTypes), any other value is kept as its bytes, so obs-text (e.g.
    /// a Latin-1 filename) goes out again byte for byte (`withUnsafeBytesOfValue`), never as U+FFFD.
    @inlinable
    public init(name: HTTPField.Name, receivedValue bytes: some Collection<UInt8>) {
        self = bytes.allSatisfy({ $0 < 0x80 })
            ? HTTPField(name: name, value: String(decoding: bytes, as: UTF8.self))
            : HTTPField(name: name, lenientValue: bytes)
    }
}

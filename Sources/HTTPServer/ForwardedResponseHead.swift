import HTTPCore
import HTTPTypes

/// A response head passed on from another server (an upstream's head, as the response parser left
/// it): the received fields minus the ones marked removed, then the fields appended here. The
/// connection writes the kept fields' received bytes as they are, so no `HTTPFields` is built for a
/// head that passes through; ``response`` builds one for code that needs an `HTTPResponse` (and any
/// change to ``HTTPServerResponse/head`` replaces the forwarded head by that one). When written, the
/// server's rules apply as for any head: framing and `Connection` fields are dropped, `Date` and
/// `Server` added only when absent. The parser validated every field line (token names, no CR, LF or
/// NUL in values), so the received bytes cannot split the message. Value type, `Sendable`.
public struct ForwardedResponseHead: Sendable {
    /// The head as received.
    public let received: ParsedResponseHead
    /// Fields added after the received ones, in order.
    public private(set) var appended = HTTPFields()
    /// Received fields not passed on: bit i of `removedLow` for i < 64, the rest listed.
    private var removedLow: UInt64 = 0
    private var removedHigh: [Int] = []

    public init(_ received: ParsedResponseHead) {
        self.received = received
    }

    public var statusCode: Int { received.status }

    /// The status as `HTTPResponse` would carry it (the received reason phrase, legalised).
    public var status: HTTPResponse.Status { HTTPResponse.Status(code: received.status, reasonPhrase: received.reason) }

    /// Marks received field `index` as not passed on.
    public mutating func removeField(at index: Int) {
        if index < 64 { removedLow |= 1 << UInt64(index) } else if !removedHigh.contains(index) { removedHigh.append(index) }
    }

    /// Whether received field `index` is passed on.
    public func keepsField(at index: Int) -> Bool {
        index < 64 ? removedLow & (1 << UInt64(index)) == 0 : !removedHigh.contains(index)
    }

    /// Adds `field` after every field passed on so far.
    public mutating func append(_ field: HTTPField) {
        if appended.isEmpty { appended.reserveCapacity(4) }  // a proxy adds a few (Via, Vary, …): one allocation
        appended.append(field)
    }

    /// Adds `fields` after every field passed on so far; when nothing was appended yet, `fields`' storage
    /// is shared, not copied (a prepared field list costs no allocation until it is edited).
    public mutating func append(contentsOf fields: HTTPFields) {
        if appended.isEmpty { appended = fields } else { appended.append(contentsOf: fields) }
    }

    /// Calls `body` with the name and value bytes of every received field passed on, in order (the
    /// appended fields are not included: see ``appended``). The pointers live for the call only.
    public func forEachKeptField(_ body: (_ name: UnsafeBufferPointer<UInt8>, _ value: UnsafeBufferPointer<UInt8>) -> Void) {
        received.headBytes.withUnsafeBufferPointer { bytes in
            for (index, ranges) in received.fieldRanges.enumerated() where keepsField(at: index) {
                body(UnsafeBufferPointer(rebasing: bytes[ranges.name]), UnsafeBufferPointer(rebasing: bytes[ranges.value]))
            }
        }
    }

    /// The values of every field named `name` passed on (received, then appended), in order.
    public func values(_ name: HTTPField.Name) -> [String] {
        var out: [String] = []
        var canonical = name.canonicalName
        canonical.withUTF8 { lower in
            forEachKeptField { fieldName, value in
                if asciiCaseInsensitiveEquals(fieldName, lower) { out.append(String(decoding: value, as: UTF8.self)) }
            }
        }
        for field in appended where field.name == name { out.append(field.value) }
        return out
    }

    /// The value of the field named `name` as `HTTPFields`' subscript answers it: nil when absent,
    /// several lines joined with ", " (`Cookie`: "; ").
    public func value(_ name: HTTPField.Name) -> String? {
        let all = values(name)
        if all.count <= 1 { return all.first }
        return all.joined(separator: name == .cookie ? "; " : ", ")
    }

    /// Whether a field named `name` is passed on.
    public func contains(_ name: HTTPField.Name) -> Bool {
        if appended.contains(name) { return true }
        var found = false
        var canonical = name.canonicalName
        canonical.withUTF8 { lower in
            forEachKeptField { fieldName, _ in if !found && asciiCaseInsensitiveEquals(fieldName, lower) { found = true } }
        }
        return found
    }

    /// The head as an `HTTPResponse`: the fields passed on as `HTTPField`s (values byte for byte), then
    /// the appended ones.
    public var response: HTTPResponse {
        var fields = HTTPFields()
        fields.reserveCapacity(received.fieldCount + appended.count)
        forEachKeptField { name, value in
            // Names are tokens (the parser checked): never nil.
            guard let fieldName = CommonFieldNames.name(name) ?? HTTPField.Name(String(decoding: name, as: UTF8.self)) else { return }
            fields.append(HTTPField(name: fieldName, receivedValue: value))
        }
        fields.append(contentsOf: appended)
        return HTTPResponse(status: status, headerFields: fields)
    }
}

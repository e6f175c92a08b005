import HTTPCore
import HTTPServer
import HTTPTypes

extension ProxyRequestHeaders {
    /// ``make(_:context:policy:)`` for a request as the server received it, as the field lines the
    /// upstream gets (``HTTPClientRequest/fieldLines``): the kept fields are copied from the received
    /// bytes, the rewritten and added ones written as `make` writes them, then `Host`. No
    /// `HTTPField` is built for a kept field. The client's request head serialised from `make`'s result
    /// and from these lines is the same (a test compares them). `authority`: the request's
    /// `head.authority`.
    public static func fieldLines(_ received: ReceivedRequestHead, authority: String?, context: Context,
                                  policy: ProxyHeaderPolicy) -> [UInt8] {
        var lines: [UInt8] = []
        lines.reserveCapacity(received.headBytes.count + 192)
        let listed = HopByHopFields.extraConnectionListed(in: received)
        var collected = Collected()
        received.forEachField { name, value in
            if HopByHopFields.isHopByHop(nameBytes: name) || (!listed.isEmpty && listed.contains { asciiCaseInsensitiveEquals(name, $0) }) {
                return
            }
            let disposition = Disposition(name, context: context, policy: policy)
            if disposition == .keep {
                // The parser refused CR, LF and NUL in values and took only tokens as names: the line
                // is safe as received.
                appendLine(name, value, to: &lines)
            } else {
                collected.add(String(decoding: value, as: UTF8.self), as: disposition)
            }
        }
        collected.addedFields(authority: authority, context: context, policy: policy) { name, existing, value in
            appendLine(name.rawName, existing, value, to: &lines)
        }
        appendLine("Host", nil, upstreamAuthority(authority, context: context, policy: policy), to: &lines)
        return lines
    }

    private static func appendLine(_ name: UnsafeBufferPointer<UInt8>, _ value: UnsafeBufferPointer<UInt8>, to lines: inout [UInt8]) {
        lines.append(contentsOf: name)
        lines.append(0x3A); lines.append(0x20)
        lines.append(contentsOf: value)
        lines.append(0x0D); lines.append(0x0A)
    }

    /// `name: existing, value` CRLF (`name: value` CRLF without `existing`), written from the strings'
    /// bytes without joining them.
    private static func appendLine(_ name: String, _ existing: String?, _ value: String, to lines: inout [UInt8]) {
        appendBytes(of: name, to: &lines, neutralising: false)
        lines.append(0x3A); lines.append(0x20)
        if let existing {
            appendBytes(of: existing, to: &lines, neutralising: true)
            lines.append(0x2C); lines.append(0x20)
        }
        appendBytes(of: value, to: &lines, neutralising: true)
        lines.append(0x0D); lines.append(0x0A)
    }

    /// Appends `text`'s UTF-8 from its contiguous storage (appending the UTF-8 view goes element by
    /// element). `neutralising`: CR, LF and NUL become spaces, as the client's encoder does; added
    /// values come from configuration and the peer's address, but a client's value extended here
    /// (Via, X-Forwarded-For) passes too.
    private static func appendBytes(of text: String, to lines: inout [UInt8], neutralising: Bool) {
        func append(_ bytes: UnsafeBufferPointer<UInt8>) {
            if neutralising && bytes.contains(where: { $0 == 0x0D || $0 == 0x0A || $0 == 0x00 }) {
                for b in bytes { lines.append(b == 0x0D || b == 0x0A || b == 0x00 ? 0x20 : b) }
            } else {
                lines.append(contentsOf: bytes)
            }
        }
        if text.utf8.withContiguousStorageIfAvailable(append) == nil {
            Array(text.utf8).withUnsafeBufferPointer(append)
        }
    }
}

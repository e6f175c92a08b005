@testable import DCServe
import DictionaryTransport
import Foundation
@testable import HTTPServer
import HTTPTypes

// Mode `header-fields`: the smaller parsers of request and upstream-response fields —
// Cache-Control for dictionary lifetimes (DictionaryCacheControl), If-None-Match / If-Modified-Since /
// If-Match / If-Unmodified-Since
// (ConditionalRequest, HTTPDate), Vary merging (VaryField), trusted-proxy addresses and the
// forwarded scheme (TrustedProxies), and the two request-path normalisers (RoutePath for routing,
// DocumentPath for files).
//
// Input: up to four values separated by NUL; each parser gets the values it takes.
//
// Invariants: lifetimes are never negative and never overflow; a 304 only ever answers a 200 and
// keeps only validator/cache fields; a merged Vary lists each name once (or is `*`); a normalised
// route path starts with "/", has no dot segments; document segments never
// contain "/", NUL, "." or "..".

func fuzzHeaderFields(_ bytes: [UInt8]) {
    let values = fieldValues(bytes, max: 4)
    let first = values[0], second = values.count > 1 ? values[1] : ""

    let cacheControl = DictionaryCacheControl(first)
    if let usable = cacheControl.usableSeconds {
        precondition(usable > 0 && usable <= 2 << 31, "usable seconds \(usable) for \(first)")
        precondition(cacheControl.allowsUseAsDictionary)
    }

    var request = HTTPFields()
    request.append(HTTPField(name: .ifNoneMatch, value: first))
    if values.count > 2 { request.append(HTTPField(name: .ifModifiedSince, value: values[2])) }
    if values.count > 3 {
        let name: HTTPField.Name = (bytes.first ?? 0) & 1 == 0 ? .ifMatch : .ifUnmodifiedSince
        request.append(HTTPField(name: name, value: values[3]))
    }
    let response = HTTPServerResponse(status: .ok, headerFields: [.eTag: second, .lastModified: values.last!,
                                                                   .contentType: "text/plain", .vary: first])
    let answer = ConditionalRequest(request).evaluate(response, identityETag: values.count > 2 ? values[2] : second)
    if answer.head.status == .preconditionFailed {
        precondition(values.count > 3, "412 without If-Match or If-Unmodified-Since")
    } else if answer.head.status == .notModified {
        let allowed: Set<HTTPField.Name> = [.eTag, .cacheControl, .vary, .lastModified, .expires, .contentLocation]
        precondition(answer.head.headerFields.allSatisfy { allowed.contains($0.name) }, "304 keeps a body field")
    } else {
        precondition(answer.head.status == .ok)
    }
    _ = HTTPDate.parse(first)

    let merged = VaryField.merged(existing: Array(values.prefix(2)), adding: VaryField.dictionaryFieldNames())
    if merged != "*" {
        // As a recipient reads it: split at comma bytes, OWS trimmed, ASCII case folded.
        let names = Array(merged.utf8).split(separator: UInt8(ascii: ","), omittingEmptySubsequences: false).map { name in
            name.drop { $0 == 0x20 || $0 == 0x09 }.reversed().drop { $0 == 0x20 || $0 == 0x09 }
                .map { $0 >= 0x41 && $0 <= 0x5A ? $0 | 0x20 : $0 }
        }
        precondition(Set(names).count == names.count, "Vary lists a name twice: \(merged.debugDescription)")
    }

    if let proxies = try? TrustedProxies([first]) {
        precondition(TrustedProxies.isAddressLiteral(first))
        _ = proxies.trusts(remoteAddress: second)
        if let scheme = TrustedProxies.forwardedScheme([HTTPField.Name("Forwarded")!: second, HTTPField.Name("X-Forwarded-Proto")!: first]) {
            precondition(scheme == "http" || scheme == "https")
        }
    }
    if let scheme = TrustedProxies.forwardedScheme([HTTPField.Name("Forwarded")!: first]) {
        precondition(scheme == "http" || scheme == "https")
    }

    // Byte-wise checks, as the server compares paths (RouteHandler matches prefixes on UTF-8 bytes):
    // String's own comparisons work on grapheme clusters, where "/" followed by a combining mark
    // (U+0363) is one Character and not "/".
    let slash = UInt8(ascii: "/"), dot = UInt8(ascii: ".")
    for path in [first, "/" + first] {
        if let route = RoutePath.normalized(path[...]) {
            if path.utf8.first == slash {
                precondition(route.utf8.first == slash, "route path \(route) of \(path)")
                let segments = Array(route.utf8).split(separator: slash, omittingEmptySubsequences: false).dropFirst()
                precondition(!segments.contains { $0.elementsEqual([dot, dot]) }
                             && !segments.dropLast().contains { $0.elementsEqual([dot]) }, "dot segment left in \(route)")
            }
        }
        if let (segments, _) = try? DocumentPath.segments(of: path[...]) {
            for s in segments.map({ Array($0.utf8) }) {
                precondition(!s.isEmpty && s != [dot] && s != [dot, dot] && !s.contains(slash) && !s.contains(0),
                             "document segment \(s) of \(path.debugDescription)")
            }
        }
    }
}

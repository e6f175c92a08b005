@testable import DCServe
import DictionaryCodec
import HTTPTypes
import PropertyBased
import Testing

/// Hostile-input properties for the proxy's field handling: field values from clients and upstreams
/// (Connection lists, Cache-Control, Content-Encoding, forwarding fields, peer addresses) never trap,
/// and what is removed stays removed.
@Suite struct ProxyHeaderRobustnessTests {
    static let hostile: [Character] = Array(",; \t=\"\\:[]abcXYZ-_09éno-transformgzipbr")
    static let strings = Gen<Character?>.element(of: hostile).map { $0! }.string(of: 0...40)

    @Test func requestHeadsFromAnyFieldValues() async {
        await propertyCheck(count: 1_000, input: Self.strings, Self.strings, Self.strings) { connection, forwardedFor, address in
            var fields = HTTPFields()
            fields.append(HTTPField(name: .connection, value: connection))
            fields.append(HTTPField(name: HTTPField.Name("X-Forwarded-For")!, value: forwardedFor))
            fields.append(HTTPField(name: .acceptEncoding, value: connection))
            fields.append(HTTPField(name: .te, value: "trailers"))
            var policy = ProxyHeaderPolicy()
            policy.forwarded = true
            let out = ProxyRequestHeaders.make(
                HTTPRequest(method: .get, scheme: "http", authority: address, path: "/", headerFields: fields),
                context: .init(clientAddress: address, scheme: "http", protocolVersion: "1.1", upstreamAuthority: "u:1"),
                policy: policy)
            #expect(out.headerFields[.connection] == nil && out.headerFields[.te] == nil)
            for name in HopByHopFields.connectionListed(in: fields) { #expect(out.headerFields[name] == nil || name == .acceptEncoding || ProxyHeadersTests.added.contains(name)) }
        }
    }

    @Test func responseFieldsAndBodiesFromAnyValues() async {
        await propertyCheck(count: 1_000, input: Self.strings, Self.strings) { cacheControl, contentEncoding in
            let fields: HTTPFields = [.cacheControl: cacheControl, .contentEncoding: contentEncoding, .connection: contentEncoding]
            _ = ProxyResponseHeaders.forbidsTransform(fields)
            let out = ProxyResponseHeaders.make(HTTPResponse(status: .ok, headerFields: fields), policy: ProxyHeaderPolicy())
            #expect(out.headerFields[.connection] == nil)
            _ = UpstreamBodyDecoder.decode(fields, body: Array(cacheControl.utf8), maxDecodedBytes: 1 << 16)
        }
    }
}

@testable import DCServe
import HTTPServer
import HTTPTypes
import Testing
import TestSupport

/// `ProxyMethodRules`: TRACE refused unless forwarded, `Max-Forwards` on TRACE/OPTIONS honoured and
/// decremented, every other method forwarded untouched. (Forwarding itself: test_methods.py.)
@Suite struct ProxyMethodRulesTests {
    func request(_ method: HTTPRequest.Method, _ fields: HTTPFields = [:]) -> HTTPServerRequest {
        HTTPServerRequest(head: testRequest(method, "/x?y", authority: "h", fields: fields))
    }

    func forwarded(_ decision: ProxyMethodRules.Decision) -> Int?? {
        if case .forward(let n) = decision { return .some(n) }
        return nil
    }

    func response(_ decision: ProxyMethodRules.Decision) -> HTTPServerResponse? {
        if case .respond(let r) = decision { return r }
        return nil
    }

    @Test func everyOtherMethodIsForwardedWithItsMaxForwardsUnchanged() throws {
        for method in ["GET", "POST", "PROPFIND", "QUERY", "get", "M-SEARCH"] {
            let m = try #require(HTTPRequest.Method(method))
            #expect(forwarded(ProxyMethodRules.decide(request(m, [.maxForwards: "0"]), forwardTrace: false)) == .some(nil))
            #expect(forwarded(ProxyMethodRules.decide(request(m), forwardTrace: true)) == .some(nil))
        }
    }

    @Test func traceIsRefusedUnlessForwarded() throws {
        let refused = try #require(response(ProxyMethodRules.decide(request(.trace), forwardTrace: false)))
        #expect(refused.head.status == .methodNotAllowed)
        #expect(refused.head.headerFields[.allow] == "GET, HEAD, POST, PUT, DELETE, OPTIONS, PATCH")
        // Even with Max-Forwards: 0, a refused TRACE reflects nothing.
        let zero = try #require(response(ProxyMethodRules.decide(request(.trace, [.maxForwards: "0"]), forwardTrace: false)))
        #expect(zero.head.status == .methodNotAllowed)
        #expect(forwarded(ProxyMethodRules.decide(request(.trace), forwardTrace: true)) == .some(nil))
    }

    @Test func maxForwardsIsDecrementedOrAnsweredAtZero() throws {
        for method in [HTTPRequest.Method.options, .trace] {
            #expect(forwarded(ProxyMethodRules.decide(request(method, [.maxForwards: "1"]), forwardTrace: true)) == .some(0))
            #expect(forwarded(ProxyMethodRules.decide(request(method, [.maxForwards: "10"]), forwardTrace: true)) == .some(9))
            #expect(forwarded(ProxyMethodRules.decide(request(method, [.maxForwards: "99999999999999999999999"]), forwardTrace: true))
                    == .some(Int.max - 1))
            for bad in ["", "-1", "1.5", "0x10", "1, 2", "+3"] {
                let r = try #require(response(ProxyMethodRules.decide(request(method, [.maxForwards: bad]), forwardTrace: true)), "\(bad)")
                #expect(r.head.status == .badRequest, "\(bad)")
            }
            var twice = HTTPFields()
            twice.append(HTTPField(name: .maxForwards, value: "3"))
            twice.append(HTTPField(name: .maxForwards, value: "3"))
            #expect(response(ProxyMethodRules.decide(request(method, twice), forwardTrace: true))?.head.status == .badRequest)
        }
        let options = try #require(response(ProxyMethodRules.decide(request(.options, [.maxForwards: "0"]), forwardTrace: false)))
        #expect(options.head.status == .ok)
        #expect(options.head.headerFields[.allow] == "GET, HEAD, POST, PUT, DELETE, OPTIONS, PATCH")
        let optionsTrace = try #require(response(ProxyMethodRules.decide(request(.options, [.maxForwards: "0"]), forwardTrace: true)))
        #expect(optionsTrace.head.headerFields[.allow]?.hasSuffix(", TRACE") == true)
    }

    @Test func traceAtZeroReflectsTheHeadWithoutCredentials() throws {
        let fields: HTTPFields = [.maxForwards: "0", .cookie: "session=secret", .authorization: "Bearer secret",
                                  .proxyAuthorization: "Basic secret", HTTPField.Name("X-Trace-Me")!: "yes"]
        let r = try #require(response(ProxyMethodRules.decide(request(.trace, fields), forwardTrace: true)))
        #expect(r.head.status == .ok)
        #expect(r.head.headerFields[.contentType] == "message/http")
        guard case .bytes(let body) = r.body else { Issue.record("not bytes"); return }
        let text = String(decoding: body, as: UTF8.self)
        #expect(text.hasPrefix("TRACE /x?y HTTP/1.1\r\n"))
        #expect(text.contains("X-Trace-Me: yes\r\n") && text.contains("Max-Forwards: 0\r\n") && text.hasSuffix("\r\n\r\n"))
        #expect(!text.contains("secret"))
    }
}

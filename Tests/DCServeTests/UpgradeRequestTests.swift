import HTTPTypes
import Testing
@testable import DCServe
import HTTPServer

/// Which requests the proxy forwards as upgrades, and with which `Upgrade` value.
@Suite struct UpgradeRequestTests {
    private func request(_ fields: HTTPFields, method: HTTPRequest.Method = .get, version: HTTPVersion = .http1_1) -> HTTPServerRequest {
        HTTPServerRequest(head: HTTPRequest(method: method, scheme: "http", authority: "x", path: "/ws", headerFields: fields),
                          body: [], version: version)
    }

    @Test func aWebSocketUpgradeIsForwarded() {
        #expect(UpgradeRequest.protocols(request([.connection: "keep-alive, Upgrade", .upgrade: "websocket"])) == "websocket")
        #expect(UpgradeRequest.protocols(request([.connection: "upgrade", .upgrade: "WebSocket, foo/2"])) == "WebSocket, foo/2")
    }

    @Test func h2cIsNeverForwarded() {
        #expect(UpgradeRequest.protocols(request([.connection: "Upgrade, HTTP2-Settings", .upgrade: "h2c"])) == nil)
        #expect(UpgradeRequest.protocols(request([.connection: "upgrade", .upgrade: "h2c, websocket"])) == "websocket")
    }

    @Test func withoutTheConnectionTokenOrOnAnotherMethodOrVersionItIsNot() {
        #expect(UpgradeRequest.protocols(request([.upgrade: "websocket"])) == nil)
        #expect(UpgradeRequest.protocols(request([.connection: "keep-alive", .upgrade: "websocket"])) == nil)
        #expect(UpgradeRequest.protocols(request([.connection: "upgrade", .upgrade: "websocket"], method: .post)) == nil)
        #expect(UpgradeRequest.protocols(request([.connection: "upgrade", .upgrade: "websocket"], version: .http1_0)) == nil)
        #expect(UpgradeRequest.protocols(request([.connection: "upgrade"])) == nil)
    }
}

import COpenSSL
import DictionaryClient
import Foundation
import HTTPTypes
#if canImport(Glibc)
import Glibc
#endif

/// One blocking HTTP/1.1 GET over a socket, plain or TLS (OpenSSL), for `dcserve fetch --transport socket`.
///
/// The fallback written before the event-loop `HTTPClient` existed (the default transport is now
/// ``HTTPClientFetchTransport``): `GET` with the given fields plus `Host` and `Connection: close`; the
/// body goes to the sink as it is read (content codings intact, chunked transfer coding removed:
/// ``ChunkedBodyReader``), framed by `Content-Length`, chunked or the connection's close; 1xx
/// responses are skipped. Memory stays bounded: a head up to `maxHeadBytes`, one read buffer.
/// TLS verifies the peer (the system store, or `caFile`) and the host name or IP address, with SNI for
/// names. Timeouts via SO_RCVTIMEO/SO_SNDTIMEO. A value used by one command; not thread-safe.
struct FetchHTTPExchange: FetchTransport {
    /// A whole response in memory (see ``FetchTransport/get(_:fields:maxBodyBytes:)``).
    struct Response {
        var status: Int
        var reason: String
        var fields: HTTPFields
        var body: [UInt8]
    }

    var caFile: String?
    var timeoutSeconds = 30
    /// Largest response head (interim responses included) read.
    var maxHeadBytes = 256 << 10

    func get(_ target: ClientRequestTarget, fields: HTTPFields, sink: any FetchResponseSink) throws {
        let fd = try connect(host: target.host, port: target.effectivePort)
        defer { close(fd) }
        var tls: TLSChannel?
        if target.scheme == "https" { tls = try TLSChannel(descriptor: fd, host: target.host, caFile: caFile) }
        defer { tls?.shutdown() }
        var head = "GET \(target.pathAndQuery) HTTP/1.1\r\nHost: \(target.authority)\r\n"
        for field in fields where field.name.canonicalName != "host" && field.name != .connection {
            head += "\(field.name.rawName): \(field.value)\r\n"
        }
        head += "Connection: close\r\n\r\n"
        try send(Array(head.utf8), fd: fd, tls: tls)
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        func read() throws -> ArraySlice<UInt8> {
            let n = try receive(&buffer, fd: fd, tls: tls)
            return buffer[0..<n]
        }
        func fail(_ message: String) -> CLIError { CLIError("\(target): \(message)") }

        // The head (interim 1xx responses skipped).
        var raw: [UInt8] = []
        var parsed: ParsedHead?
        while parsed == nil {
            var start = 0
            var end = Self.findHeadEnd(raw, from: 0)
            while let e = end {
                let candidate = try Self.parseHead(raw[start..<e], target: target)
                start = e + 4
                if (100..<200).contains(candidate.status) {
                    end = Self.findHeadEnd(raw, from: start)
                    continue
                }
                parsed = candidate
                break
            }
            raw.removeFirst(start)
            if parsed != nil { break }
            guard raw.count <= maxHeadBytes else { throw fail("response head larger than \(maxHeadBytes) bytes") }
            let piece = try read()
            if piece.isEmpty { throw fail("the server closed the connection before a complete response head") }
            raw.append(contentsOf: piece)
        }
        let response = parsed!
        try sink.receiveHead(status: response.status, reason: response.reason, fields: response.fields)
        if response.status == 204 || response.status == 304 { return }

        if let te = response.fields[.transferEncoding] {
            guard te.lowercased().trimmingCharacters(in: .whitespaces) == "chunked" else {
                throw fail("unsupported Transfer-Encoding \(te.debugDescription)")
            }
            var chunked = ChunkedBodyReader()
            var piece = raw[...]
            while true {
                do {
                    try chunked.consume(piece) { data in try data.withUnsafeBytes { try sink.receiveBody($0) } }
                } catch let error as ChunkedBodyReader.Malformed {
                    throw fail(error.reason)
                }
                if chunked.isComplete { return }
                piece = try read()
                if piece.isEmpty { throw fail("the connection closed in the middle of a chunked body") }
            }
        }
        if let lengthText = response.fields[values: .contentLength].first {
            guard Set(response.fields[values: .contentLength]).count == 1, let length = Int(lengthText), length >= 0 else {
                throw fail("invalid Content-Length \(lengthText.debugDescription)")
            }
            var remaining = length
            var piece = raw[...]
            while true {
                let used = piece.prefix(remaining)
                if !used.isEmpty { try used.withUnsafeBytes { try sink.receiveBody($0) } }
                remaining -= used.count
                if remaining == 0 { return }
                piece = try read()
                if piece.isEmpty { throw fail("the connection closed after \(length - remaining) of \(length) body bytes") }
            }
        }
        // Delimited by the connection's close.
        var piece = raw[...]
        while !piece.isEmpty {
            try piece.withUnsafeBytes { try sink.receiveBody($0) }
            piece = try read()
        }
    }

    // MARK: - Parsing

    struct ParsedHead {
        var status: Int
        var reason: String
        var fields: HTTPFields
    }

    /// Parses a response head (without its final CRLF CRLF); throws a `CLIError` for a malformed one.
    static func parseHead(_ bytes: ArraySlice<UInt8>, target: ClientRequestTarget) throws -> ParsedHead {
        let lines = String(decoding: bytes, as: UTF8.self).components(separatedBy: "\r\n")
        let statusParts = lines[0].split(separator: " ", maxSplits: 2, omittingEmptySubsequences: false)
        guard statusParts.count >= 2, statusParts[0] == "HTTP/1.1" || statusParts[0] == "HTTP/1.0",
              statusParts[1].count == 3, let status = Int(statusParts[1]), (100...599).contains(status) else {
            throw CLIError("\(target): not an HTTP/1.x response: \(lines[0].prefix(80).debugDescription)")
        }
        var fields = HTTPFields()
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":"), let name = HTTPField.Name(String(line[..<colon])),
                  !line.hasPrefix(" "), !line.hasPrefix("\t") else {
                throw CLIError("\(target): malformed response field line: \(line.prefix(80).debugDescription)")
            }
            fields.append(HTTPField(name: name, value: line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)))
        }
        return ParsedHead(status: status, reason: statusParts.count > 2 ? String(statusParts[2]) : "", fields: fields)
    }

    static func findHeadEnd(_ raw: [UInt8], from start: Int) -> Int? {
        guard raw.count >= start + 4 else { return nil }
        var i = start
        while i + 3 < raw.count {
            if raw[i] == 13, raw[i + 1] == 10, raw[i + 2] == 13, raw[i + 3] == 10 { return i }
            i += 1
        }
        return nil
    }

    // MARK: - Sockets

    private func connect(host: String, port: Int) throws -> Int32 {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        let bare = host.hasPrefix("[") ? String(host.dropFirst().dropLast()) : host
        let rc = getaddrinfo(bare, String(port), &hints, &list)
        guard rc == 0, let first = list else {
            throw CLIError("cannot resolve \(host) (\(String(cString: gai_strerror(rc))))")
        }
        defer { freeaddrinfo(list) }
        var lastError = ECONNREFUSED
        var cursor: UnsafeMutablePointer<addrinfo>? = first
        while let info = cursor {
            cursor = info.pointee.ai_next
            let fd = socket(info.pointee.ai_family, info.pointee.ai_socktype | Int32(SOCK_CLOEXEC.rawValue), info.pointee.ai_protocol)
            if fd < 0 { lastError = errno; continue }
            var timeout = timeval(tv_sec: timeoutSeconds, tv_usec: 0)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            if Glibc.connect(fd, info.pointee.ai_addr, info.pointee.ai_addrlen) == 0 { return fd }
            lastError = errno
            close(fd)
        }
        throw CLIError("cannot connect to \(host):\(port) (\(String(cString: strerror(lastError))))")
    }

    private func send(_ bytes: [UInt8], fd: Int32, tls: TLSChannel?) throws {
        if let tls { return try tls.write(bytes) }
        var sent = 0
        while sent < bytes.count {
            let n = bytes[sent...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n < 0, errno == EINTR { continue }
            if n <= 0 { throw CLIError("sending the request failed (\(String(cString: strerror(errno))))") }
            sent += n
        }
    }

    private func receive(_ buffer: inout [UInt8], fd: Int32, tls: TLSChannel?) throws -> Int {
        if let tls { return try tls.read(&buffer) }
        while true {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n >= 0 { return n }
            if errno == EINTR { continue }
            if errno == EAGAIN || errno == EWOULDBLOCK { throw CLIError("timed out after \(timeoutSeconds) s waiting for the response") }
            throw CLIError("reading the response failed (\(String(cString: strerror(errno))))")
        }
    }
}

/// A blocking TLS client session over a connected socket (OpenSSL). Owns its SSL objects; the caller
/// owns and closes the socket. Not thread-safe.
final class TLSChannel {
    private let context: OpaquePointer
    private let ssl: OpaquePointer

    init(descriptor: Int32, host: String, caFile: String?) throws {
        guard let context = SSL_CTX_new(TLS_client_method()) else { throw CLIError("TLS: cannot create a context") }
        self.context = context
        guard let ssl = SSL_new(context) else {
            SSL_CTX_free(context)
            throw CLIError("TLS: cannot create a session")
        }
        self.ssl = ssl
        _ = dcserve_SSL_CTX_set_min_proto_version(context, TLS1_2_VERSION)
        if let caFile {
            guard SSL_CTX_load_verify_locations(context, caFile, nil) == 1 else {
                throw CLIError("TLS: cannot load CA certificates from \(caFile): \(Self.errorText())")
            }
        } else {
            SSL_CTX_set_default_verify_paths(context)
        }
        SSL_set_verify(ssl, SSL_VERIFY_PEER, nil)
        let bare = host.hasPrefix("[") ? String(host.dropFirst().dropLast()) : host
        var address = in6_addr()
        let isIP = inet_pton(AF_INET, bare, &address) == 1 || inet_pton(AF_INET6, bare, &address) == 1
        if isIP {
            X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), bare)
        } else {
            _ = dcserve_SSL_set_tlsext_host_name(ssl, bare)
            SSL_set1_host(ssl, bare)
        }
        SSL_set_fd(ssl, descriptor)
        guard SSL_connect(ssl) == 1 else {
            let verify = SSL_get_verify_result(ssl)
            let reason = verify != X509_V_OK ? String(cString: X509_verify_cert_error_string(verify)) : Self.errorText()
            throw CLIError("TLS handshake with \(host) failed: \(reason)")
        }
    }

    func write(_ bytes: [UInt8]) throws {
        var sent = 0
        while sent < bytes.count {
            let n = bytes[sent...].withUnsafeBytes { SSL_write(ssl, $0.baseAddress, Int32($0.count)) }
            guard n > 0 else { throw CLIError("TLS: sending the request failed: \(Self.errorText())") }
            sent += Int(n)
        }
    }

    func read(_ buffer: inout [UInt8]) throws -> Int {
        let n = buffer.withUnsafeMutableBytes { SSL_read(ssl, $0.baseAddress, Int32($0.count)) }
        if n > 0 { return Int(n) }
        let error = SSL_get_error(ssl, n)
        if error == SSL_ERROR_ZERO_RETURN { return 0 }
        // A peer that closes without close_notify: treat as the end (framing decides if it was complete).
        if error == SSL_ERROR_SYSCALL, errno == 0 || errno == ECONNRESET { return 0 }
        if error == SSL_ERROR_SYSCALL, errno == EAGAIN { throw CLIError("timed out waiting for the response") }
        throw CLIError("TLS: reading the response failed: \(Self.errorText())")
    }

    func shutdown() { SSL_shutdown(ssl) }

    deinit {
        SSL_free(ssl)
        SSL_CTX_free(context)
    }

    static func errorText() -> String {
        let code = ERR_get_error()
        guard code != 0 else { return "unknown error" }
        var buffer = [CChar](repeating: 0, count: 256)
        ERR_error_string_n(code, &buffer, buffer.count)
        return String(cString: buffer)
    }
}

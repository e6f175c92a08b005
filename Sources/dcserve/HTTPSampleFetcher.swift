import DictionaryCodec
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Fetches training samples from a running origin (`dcserve train --urls FILE`).
///
/// The file lists one absolute `http://host[:port]/path` URL per line (blank lines and `#` comments
/// ignored). Each URL is fetched with a minimal HTTP/1.1 client over a POSIX socket — `GET`,
/// `Accept-Encoding: identity`, `Connection: close`, 10-second connect/read timeouts, bodies up to
/// 32 MiB, `Content-Length`, chunked or close-delimited bodies. Redirects are not followed. Any
/// failure (bad URL, unreachable host, timeout, non-2xx status) is an error naming the URL: nothing is
/// trained on a partial set. `https` is not supported (fetch from the origin directly, or save the
/// responses into a directory). Sequential; not thread-safe (a value used by one command).
struct HTTPSampleFetcher {
    static let maxBodyBytes = 32 << 20
    var timeoutSeconds = 10

    func fetchAll(listFile: String) throws -> [TrainingSample] {
        let text = String(decoding: try CLIFile.read(listFile), as: UTF8.self)
        let urls = text.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty && !$0.hasPrefix("#") }
        var samples: [TrainingSample] = []
        for url in urls { samples.append(TrainingSample(name: url, bytes: try fetch(url))) }
        return samples
    }

    func fetch(_ url: String) throws -> [UInt8] {
        guard url.hasPrefix("http://") else {
            throw CLIError("\(url): only http:// URLs can be fetched (https is not supported by the sample fetcher)")
        }
        let rest = url.dropFirst("http://".count)
        let authority = rest.prefix { $0 != "/" }
        let path = rest.dropFirst(authority.count)
        var host = String(authority), port = "80"
        if authority.hasPrefix("[") , let close = authority.firstIndex(of: "]") {
            host = String(authority[authority.index(after: authority.startIndex)..<close])
            let after = authority[authority.index(after: close)...]
            if after.hasPrefix(":") { port = String(after.dropFirst()) }
        } else if let colon = authority.lastIndex(of: ":") {
            host = String(authority[..<colon]); port = String(authority[authority.index(after: colon)...])
        }
        guard !host.isEmpty, UInt16(port) != nil else { throw CLIError("\(url): not a valid http URL") }
        let fd = try connect(host: host, port: port, url: url)
        defer { close(fd) }
        let request = "GET \(path.isEmpty ? "/" : String(path)) HTTP/1.1\r\nHost: \(authority)\r\n"
            + "Accept-Encoding: identity\r\nUser-Agent: dcserve-train\r\nConnection: close\r\n\r\n"
        var sent = 0
        let bytes = Array(request.utf8)
        while sent < bytes.count {
            let n = bytes[sent...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n <= 0 { throw CLIError("\(url): sending the request failed (\(String(cString: strerror(errno))))") }
            sent += n
        }
        var response: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n == 0 { break }
            if n < 0 {
                if errno == EINTR { continue }
                throw CLIError("\(url): reading the response failed (\(errno == EAGAIN ? "timed out after \(timeoutSeconds) s" : String(cString: strerror(errno))))")
            }
            response.append(contentsOf: buffer[0..<n])
            if response.count > Self.maxBodyBytes + 64 * 1024 { break }
        }
        return try Self.parse(response, url: url)
    }

    private func connect(host: String, port: String, url: String) throws -> Int32 {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        let rc = getaddrinfo(host, port, &hints, &list)
        guard rc == 0, let first = list else {
            throw CLIError("\(url): cannot resolve \(host) (\(String(cString: gai_strerror(rc))))")
        }
        defer { freeaddrinfo(list) }
        var lastError = ECONNREFUSED
        var cursor: UnsafeMutablePointer<addrinfo>? = first
        while let info = cursor {
            cursor = info.pointee.ai_next
            let fd = socket(info.pointee.ai_family, info.pointee.ai_socktype, info.pointee.ai_protocol)
            if fd < 0 { lastError = errno; continue }
            var timeout = timeval(tv_sec: timeoutSeconds, tv_usec: 0)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            if Glibc.connect(fd, info.pointee.ai_addr, info.pointee.ai_addrlen) == 0 { return fd }
            lastError = errno
            close(fd)
        }
        throw CLIError("\(url): cannot connect to \(host):\(port) (\(String(cString: strerror(lastError))))")
    }

    /// Parses a complete HTTP/1.1 response and returns its body; non-2xx is an error.
    static func parse(_ response: [UInt8], url: String) throws -> [UInt8] {
        let separator: [UInt8] = [13, 10, 13, 10]
        guard let headerEnd = response.indices.dropLast(3).first(where: { Array(response[$0..<$0 + 4]) == separator }) else {
            throw CLIError("\(url): the server closed the connection without a complete HTTP response")
        }
        let head = String(decoding: response[..<headerEnd], as: UTF8.self)
        let lines = head.components(separatedBy: "\r\n")
        let status = lines[0].split(separator: " ")
        guard status.count >= 2, status[0].hasPrefix("HTTP/1."), let code = Int(status[1]) else {
            throw CLIError("\(url): not an HTTP/1.x response")
        }
        guard (200..<300).contains(code) else { throw CLIError("\(url): HTTP \(lines[0].dropFirst(9))") }
        var fields: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            fields[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        if let coding = fields["content-encoding"], coding.lowercased() != "identity" {
            throw CLIError("\(url): the response is \(coding)-encoded although identity was asked for")
        }
        let body = Array(response[(headerEnd + 4)...])
        if fields["transfer-encoding"]?.lowercased().contains("chunked") == true {
            return try dechunk(body, url: url)
        }
        if let length = fields["content-length"].flatMap({ Int($0) }) {
            guard body.count >= length else { throw CLIError("\(url): body truncated (\(body.count) of \(length) bytes)") }
            guard length <= maxBodyBytes else { throw CLIError("\(url): body larger than \(maxBodyBytes) bytes") }
            return Array(body.prefix(length))
        }
        return Array(body.prefix(maxBodyBytes))
    }

    static func dechunk(_ body: [UInt8], url: String) throws -> [UInt8] {
        var out: [UInt8] = []
        var i = 0
        while true {
            guard let lineEnd = body[i...].indices.dropLast().first(where: { body[$0] == 13 && body[$0 + 1] == 10 }) else {
                throw CLIError("\(url): malformed chunked body")
            }
            let sizeText = String(decoding: body[i..<lineEnd], as: UTF8.self).split(separator: ";")[0]
            guard let size = Int(sizeText.trimmingCharacters(in: .whitespaces), radix: 16), size >= 0 else {
                throw CLIError("\(url): malformed chunk size")
            }
            i = lineEnd + 2
            if size == 0 { return out }
            guard i + size <= body.count, out.count + size <= maxBodyBytes else { throw CLIError("\(url): chunked body truncated or too large") }
            out.append(contentsOf: body[i..<i + size])
            i += size + 2
        }
    }
}

import ArgumentParser
import DCServeLab
import Dispatch
import Foundation
import HTTPServer

/// `dcserve lab`: the conformance lab for client developers. Serves the scenarios, the
/// JSON plan, the browser page and the graded reports until SIGTERM/SIGINT. Prints
/// `lab listening on http://HOST:PORT/lab/` (one line per listener) on standard error.
struct LabCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "lab",
        abstract: "Run the RFC 9842 client conformance lab (browser page at /lab/, JSON plan at /lab/plan.json).",
        discussion: """
            Point a browser at http://localhost:PORT/lab/ (dictionaries need a secure context: localhost or HTTPS), \
            run `dcserve fetch --lab http://HOST:PORT`, or let an app follow /lab/plan.json. \
            Results: /lab/runs/<run>/ (HTML) and /lab/runs/<run>/results.json.
            """
    )

    @Option(help: "TCP port; 0 picks a free one.")
    var port: UInt16 = 8095

    @Option(help: "Address to bind (IPv4 or IPv6 literal). Repeat for several. Default 127.0.0.1.")
    var host: [String] = []

    @Option(help: "PEM certificate chain: serve the lab over HTTPS (needs --tls-key).")
    var tlsCert: String?

    @Option(help: "PEM private key for --tls-cert.")
    var tlsKey: String?

    func validate() throws {
        if (tlsCert == nil) != (tlsKey == nil) { throw ValidationError("--tls-cert and --tls-key go together") }
        for h in host where !Socket.isAddressLiteral(h) {
            throw ValidationError("--host \(h.debugDescription): expected an IPv4 or IPv6 address literal")
        }
        for file in [tlsCert, tlsKey].compactMap({ $0 }) where !FileManager.default.isReadableFile(atPath: file) {
            throw ValidationError("cannot read \(file)")
        }
    }

    func run() throws {
        let tls = tlsCert.map { TLSConfiguration(certificateChainFile: $0, privateKeyFile: tlsKey!) }
        let lab = LabServer(hosts: host.isEmpty ? ["127.0.0.1"] : host, port: port, tls: tls)
        signal(SIGTERM, SIG_IGN)
        signal(SIGINT, SIG_IGN)
        let stop = DispatchSemaphore(value: 0)
        let queue = DispatchQueue(label: "dcserve.lab.signals")
        let sources = [SIGTERM, SIGINT].map { sig in
            let source = DispatchSource.makeSignalSource(signal: sig, queue: queue)
            source.setEventHandler { stop.signal() }
            source.resume()
            return source
        }
        do {
            try lab.start()
        } catch let error as SocketError {
            throw CLIError(error.isAddressInUse ? "cannot listen on port \(port): already in use" : "cannot listen: \(error)")
        } catch {
            throw CLIError("cannot start the lab: \(error)")
        }
        for endpoint in lab.endpoints {
            FileHandle.standardError.write(Data("lab listening on \(endpoint)/lab/\n".utf8))
        }
        stop.wait()
        FileHandle.standardError.write(Data("lab shutting down\n".utf8))
        lab.shutdown(deadline: .seconds(2))
        withExtendedLifetime(sources) {}
    }
}

import Dispatch
import Foundation
import HTTPServer
import Logging

/// SIGHUP through a DispatchSource signal source: re-reads the TLS certificate and key files. New
/// connections get the new certificates; open ones keep theirs. A failed reload is logged and the
/// old certificates stay in use.
enum CertificateReloadSignal {
    nonisolated(unsafe) private static var source: DispatchSourceSignal?

    static func install(server: HTTPServer, logger: Logger) {
        signal(SIGHUP, SIG_IGN)  // let the dispatch source see it instead of the default action (exit)
        let s = DispatchSource.makeSignalSource(signal: SIGHUP, queue: DispatchQueue(label: "dcserve.sighup"))
        s.setEventHandler {
            do {
                try server.reloadCertificates()
                logger.info("reloaded TLS certificates", metadata: ["signal": "SIGHUP"])
            } catch {
                logger.error("TLS certificate reload failed; keeping the previous certificates", metadata: ["error": "\(error)"])
            }
        }
        s.resume()
        source = s
    }
}

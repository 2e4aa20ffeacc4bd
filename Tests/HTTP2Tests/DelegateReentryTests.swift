#if canImport(Glibc)
import Glibc
#endif
import Crypto
import HTTP2
import HTTP2TestSupport
import IO
import Testing

/// A delegate that sends its next request from inside the callback that delivers the previous
/// answer: a natural way to chain requests, and one that must not trip Swift's exclusivity check
/// (the connection used to call back while it still held an access to its stream table).
final class ChainingDelegate: ClientConnectionDelegate {
    let loop: EventLoop
    let total: Int
    var sent = 0
    var answered = 0
    var failures: [String] = []
    let headers = HeaderList([("apns-topic", "com.example")])

    init(loop: EventLoop, total: Int) { self.loop = loop; self.total = total }

    func submitNext(on connection: ClientConnection) {
        guard sent < total else { return }
        if connection.submit(method: "POST", path: "/3/device/\(sent)", headers: headers, body: SharedBytes(Array("x".utf8)),
                             deadline: MonotonicInstant.now() + .nanoseconds(10_000_000_000)) != nil {
            sent += 1
        }
    }

    func connectionDidOpen(_ connection: ClientConnection) {}
    func connection(_ connection: ClientConnection, canSubmit capacity: Int) { if sent == 0 { submitNext(on: connection) } }
    func connection(_ connection: ClientConnection, didReceive response: ResponseView, stream: Int) {
        answered += 1
        if answered == total { connection.close() } else { submitNext(on: connection) }
    }
    func connection(_ connection: ClientConnection, didFail failure: StreamFailure, stream: Int) {
        failures.append("\(failure)")
        connection.close()
    }
    func connection(_ connection: ClientConnection, didClose error: TransportError?, goAway: GoAwayInfo?) {
        if let error { failures.append("\(error)") }
        loop.stop()
    }
}

@Suite struct DelegateReentryTests {
    @Test("a delegate may submit the next request from inside didReceive")
    func submittingFromDidReceiveIsSafe() throws {
        let certificates = TransportTests.certificates
        let tls = try TLSConfiguration.server(certificateFile: certificates.cert, keyFile: certificates.key)
        try withServer(tls: tls, handler: EchoHandler(), name: "reentry-server") { server in
            let loop = try EventLoop(name: "reentry-client")
            let delegate = ChainingDelegate(loop: loop, total: 50)
            let connection = ClientConnection(loop: loop, options: ClientConnectionOptions(
                host: "127.0.0.1", port: server.port, tls: try TLSConfiguration.client(caFile: certificates.ca)))
            connection.delegate = delegate
            loop.execute { connection.connect() }
            loop.run()
            #expect(delegate.failures.isEmpty, "\(delegate.failures)")
            #expect(delegate.answered == 50)
        }
    }
}

#if canImport(Glibc)
import Glibc
#endif
import Crypto
import HTTP2
import IO
import JSONCore
import Vocabulary
import Testing

/// PING on idle connections: an answering peer keeps the connection, a silent one (a process that
/// stopped, like a half-open TCP connection) is detected and the connection closed.
@Suite(.serialized) struct PingTests {
    /// Records what a connection reports; read from the test thread through the Lock.
    final class Watcher: ClientConnectionDelegate, @unchecked Sendable {
        let state = Lock<(opened: Bool, closed: TransportError??, pings: Int, acks: Int)>((false, nil, 0, 0))
        func connectionDidOpen(_ connection: ClientConnection) { state.withLock { $0.opened = true } }
        func connection(_ connection: ClientConnection, canSubmit capacity: Int) {
            state.withLock { $0.pings = connection.pingsSent; $0.acks = connection.pingsAcknowledged }
        }
        func connection(_ connection: ClientConnection, didReceive response: ResponseView, stream: Int) {}
        func connection(_ connection: ClientConnection, didFail failure: StreamFailure, stream: Int) {}
        func connection(_ connection: ClientConnection, didClose error: TransportError?, goAway: GoAwayInfo?) {
            state.withLock { $0.closed = .some(error) }
        }
    }

    func waitFor(seconds: Double, _ condition: () -> Bool) -> Bool {
        for _ in 0..<Int(seconds * 100) {
            if condition() { return true }
            usleep(10_000)
        }
        return condition()
    }

    @Test func idleConnectionsArePingedAndASilentPeerIsDropped() throws {
        try #require(access(SimulatorProcessTests.binary, X_OK) == 0, "build the binary first: swift build")
        let certDir = temporaryDirectory("sokuho-ping") + "/certs"
        let child = ChildProcess(SimulatorProcessTests.binary, ["simulator", "--cert-dir", certDir, "--duration", "60"])
        defer { kill(child.pid, SIGCONT); kill(child.pid, SIGKILL); _ = child.wait() }
        let line = try #require(child.readLine())
        let port = try #require(try? JSONParser.parse(Array(line.utf8))["port"]?.int64Value)

        let loop = try EventLoop(name: "ping-test")
        var options = ClientConnectionOptions(host: "127.0.0.1", port: Int(port), serverName: "localhost",
                                              tls: try TLSConfiguration.client(caFile: certDir + "/ca.pem"))
        options.pingAfterIdle = .nanoseconds(100_000_000)
        options.pingTimeout = .nanoseconds(400_000_000)
        let connection = ClientConnection(loop: loop, options: options)
        let watcher = Watcher()
        connection.delegate = watcher
        loop.execute { connection.connect() }
        let thread = loop.start()
        defer { loop.stop(); thread.join() }

        // An answering peer: PINGs go out after idle periods and come back; the connection stays open.
        #expect(waitFor(seconds: 5) { watcher.state.withLock { $0.opened } })
        #expect(waitFor(seconds: 5) { watcher.state.withLock { $0.acks >= 2 } }, "PINGs after idle must be answered")
        #expect(watcher.state.withLock { $0.closed == nil })

        // A silent peer: the simulator process is stopped, so the next PING is never answered.
        kill(child.pid, SIGSTOP)
        #expect(waitFor(seconds: 5) { watcher.state.withLock { $0.closed != nil } }, "a silent peer must be detected")
        let closed = watcher.state.withLock { $0.closed }
        #expect(closed??.description.contains("PING") == true, "\(String(describing: closed))")
    }
}

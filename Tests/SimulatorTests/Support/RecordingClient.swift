#if canImport(Glibc)
import Glibc
#endif
import Crypto
import HTTP2
import HTTP2TestSupport
import IO
import Vocabulary

/// One client connection to the simulator that sends requests one after another (each waits for
/// the previous answer) and records everything the connection reports: answers, failures, the
/// GOAWAY, why it closed and its PINGs. OneShotClient hides GOAWAY and PINGs; fault tests need them.
/// The loop runs on its own thread, so a test can look at the simulator while the connection is open.
final class RecordingClient: ClientConnectionDelegate, @unchecked Sendable {
    // @unchecked: the delegate calls arrive on the loop thread; the test reads `state` through the Lock.
    struct State {
        var results: [ClientResult] = []
        var closed = false
        var closeError: TransportError?
        var goAway: GoAwayInfo?
        var pingsSent = 0
        var pingsAcknowledged = 0
        /// PINGs acknowledged when the last request was submitted.
        var acknowledgedAtLastSubmit = 0
    }

    let state = Lock(State())
    private let request: ClientRequest
    private let headers: HeaderList
    private let count: Int
    private let waitForPingAck: Bool
    private var inFlight = false
    private var submitted = 0
    private let loop: EventLoop
    private let connection: ClientConnection
    private var thread: OSThread?

    /// Sends `request` `count` times. With `waitForPingAck`, the first request goes out only after
    /// one idle PING was acknowledged: proof the server answers PINGs on this very connection.
    init(port: Int, ca: String, authorization: String, request: ClientRequest, count: Int, waitForPingAck: Bool = false,
         pingAfterIdle: Duration = .seconds(3600), pingTimeout: Duration = .seconds(10)) throws {
        self.request = request
        self.count = count
        self.waitForPingAck = waitForPingAck
        headers = HeaderList(request.headers)
        loop = try EventLoop(name: "recording-client")
        var options = ClientConnectionOptions(host: "127.0.0.1", port: port, tls: try TLSConfiguration.client(caFile: ca))
        options.pingAfterIdle = pingAfterIdle
        options.pingTimeout = pingTimeout
        connection = ClientConnection(loop: loop, options: options)
        connection.delegate = self
        connection.setAuthorization(authorization)
        let connection = self.connection
        loop.execute { connection.connect() }
        thread = loop.start()
    }

    /// Waits until the connection closed (or `seconds` passed); true if it closed.
    func waitUntilClosed(seconds: Double) -> Bool { wait(seconds: seconds) { $0.closed } }

    /// Waits until `condition` holds on the recorded state (or `seconds` passed).
    func wait(seconds: Double, _ condition: (State) -> Bool) -> Bool {
        for _ in 0..<Int(seconds * 100) {
            if state.withLock({ condition($0) }) { return true }
            usleep(10_000)
        }
        return state.withLock { condition($0) }
    }

    /// Closes the connection if still open and ends the loop thread.
    func finish() {
        let connection = self.connection
        loop.execute { connection.close() }
        _ = waitUntilClosed(seconds: 5)
        loop.stop()
        thread?.join()
        thread = nil
    }

    func connectionDidOpen(_ connection: ClientConnection) {}

    func connection(_ connection: ClientConnection, canSubmit capacity: Int) {
        record(connection)
        guard !inFlight, submitted < count else { return }
        if waitForPingAck && connection.pingsAcknowledged == 0 { return }
        inFlight = connection.submit(method: request.method, path: request.path, headers: headers,
                                     body: request.body.map { SharedBytes($0) },
                                     deadline: MonotonicInstant.now() + .nanoseconds(30_000_000_000)) != nil
        if inFlight {
            submitted += 1
            state.withLock { $0.acknowledgedAtLastSubmit = connection.pingsAcknowledged }
        }
    }

    func connection(_ connection: ClientConnection, didReceive response: ResponseView, stream: Int) {
        let result = ClientResult.response(status: response.status, headers: response.headers, body: response.bodyBytes)
        state.withLock { $0.results.append(result) }
        inFlight = false
        record(connection)
    }

    func connection(_ connection: ClientConnection, didFail failure: StreamFailure, stream: Int) {
        state.withLock { $0.results.append(.failed(failure)) }
        inFlight = false
    }

    func connection(_ connection: ClientConnection, didClose error: TransportError?, goAway: GoAwayInfo?) {
        state.withLock {
            $0.closed = true
            $0.closeError = error
            $0.goAway = goAway
            $0.pingsSent = connection.pingsSent
            $0.pingsAcknowledged = connection.pingsAcknowledged
        }
    }

    private func record(_ connection: ClientConnection) {
        state.withLock { $0.pingsSent = connection.pingsSent; $0.pingsAcknowledged = connection.pingsAcknowledged }
    }
}

import Crypto
import HTTP2
import HTTP2TestSupport
import IO

/// Sends one request per entry of `authorizations`, one after another on ONE connection, switching
/// the provider token before each: what a sender that refreshes tokens too eagerly would do.
enum TokenSwitchingClient {
    static func perform(port: Int, ca: String, authorizations: [String], request: ClientRequest) throws -> [ClientResult] {
        let loop = try EventLoop(name: "token-switching-client")
        let connection = ClientConnection(loop: loop, options: ClientConnectionOptions(
            host: "127.0.0.1", port: port, tls: try TLSConfiguration.client(caFile: ca)))
        let driver = Driver(loop: loop, authorizations: authorizations, request: request)
        connection.delegate = driver
        loop.execute { connection.connect() }
        loop.run()
        return driver.results
    }

    private final class Driver: ClientConnectionDelegate {
        let loop: EventLoop
        let authorizations: [String]
        let headers: HeaderList
        let request: ClientRequest
        var results: [ClientResult] = []
        var inFlight = false

        init(loop: EventLoop, authorizations: [String], request: ClientRequest) {
            self.loop = loop
            self.authorizations = authorizations
            self.request = request
            headers = HeaderList(request.headers)
        }

        func connectionDidOpen(_ connection: ClientConnection) {}

        func connection(_ connection: ClientConnection, canSubmit capacity: Int) {
            guard !inFlight, results.count < authorizations.count else { return }
            connection.setAuthorization(authorizations[results.count])
            inFlight = connection.submit(method: request.method, path: request.path, headers: headers,
                                         body: request.body.map { SharedBytes($0) },
                                         deadline: MonotonicInstant.now() + .nanoseconds(10_000_000_000)) != nil
        }

        func connection(_ connection: ClientConnection, didReceive response: ResponseView, stream: Int) {
            results.append(.response(status: response.status, headers: response.headers, body: response.bodyBytes))
            next(connection)
        }

        func connection(_ connection: ClientConnection, didFail failure: StreamFailure, stream: Int) {
            results.append(.failed(failure))
            next(connection)
        }

        private func next(_ connection: ClientConnection) {
            inFlight = false
            if results.count == authorizations.count { connection.close() }
        }

        func connection(_ connection: ClientConnection, didClose error: TransportError?, goAway: GoAwayInfo?) {
            loop.stop()
        }
    }
}

import HTTP2
import IO

/// A request for `OneShotClient`.
public struct ClientRequest: Sendable {
    public var method: StaticString
    public var path: String
    public var headers: [(name: String, value: String)]
    public var body: [UInt8]?

    public init(method: StaticString, path: String, headers: [(name: String, value: String)], body: [UInt8]? = nil) {
        self.method = method
        self.path = path
        self.headers = headers
        self.body = body
    }
}

/// What became of one request sent by `OneShotClient`.
public enum ClientResult: Sendable {
    case response(status: Int, headers: [(name: String, value: String)], body: [UInt8])
    case failed(StreamFailure)
}

/// Opens one connection, sends a few requests in order (as many at once as the server allows),
/// waits for every answer and closes, with no retries and no judgement of the answers: the raw
/// HTTP/2 client of the transport and simulator tests, which want to see exactly what the server
/// did. (The product sends through `ConnectionPool.perform`, which applies APNs' rules.) Runs its
/// own event loop on the calling thread.
public enum OneShotClient {
    /// The results in request order, or the error that kept the connection from opening.
    /// `streamsUntilFirstSuccess` caps the streams in flight until a request is answered with 2xx
    /// (APNs allows one on a new token connection; nil: only the server's SETTINGS count), and
    /// `streamsUntilFirstAnswer` until any answer (the simulator's FCM side: the port it shares
    /// with APNs allows one stream until a connection's first request says it speaks FCM).
    public static func perform(_ requests: [ClientRequest], options: ClientConnectionOptions, authorization: String?,
                               timeout: Duration = .seconds(30), streamsUntilFirstSuccess: Int? = nil,
                               streamsUntilFirstAnswer: Int? = nil) -> Result<[ClientResult], TransportError> {
        let loop: EventLoop
        do { loop = try EventLoop(name: "sokuho-client") } catch { return .failure(error) }
        let driver = Driver(requests: requests, loop: loop, timeout: timeout)
        driver.streamsUntilFirstSuccess = streamsUntilFirstSuccess
        driver.streamsUntilFirstAnswer = streamsUntilFirstAnswer
        let connection = ClientConnection(loop: loop, options: options)
        connection.delegate = driver
        if let authorization { connection.setAuthorization(authorization) }
        loop.execute { connection.connect() }
        loop.run()
        if let error = driver.openError { return .failure(error) }
        return .success(driver.results.map { $0 ?? .failed(.refused("not sent: the connection closed first")) })
    }

    private final class Driver: ClientConnectionDelegate {
        let requests: [ClientRequest]
        let loop: EventLoop
        let deadline: MonotonicInstant
        var next = 0
        var streamsUntilFirstSuccess: Int?
        var hadSuccess = false
        var streamsUntilFirstAnswer: Int?
        var hadAnswer = false
        /// Which request each stream handle carries.
        var requestOfStream: [Int: Int] = [:]
        var results: [ClientResult?]
        var remaining: Int
        var openError: TransportError?
        var opened = false
        let lists: [HeaderList]
        let bodies: [SharedBytes?]

        init(requests: [ClientRequest], loop: EventLoop, timeout: Duration) {
            self.requests = requests
            self.loop = loop
            deadline = MonotonicInstant.now() + timeout
            results = Array(repeating: nil, count: requests.count)
            remaining = requests.count
            lists = requests.map { HeaderList($0.headers) }
            bodies = requests.map { $0.body.map { SharedBytes($0) } }
        }

        func connectionDidOpen(_ connection: ClientConnection) {
            opened = true
            if remaining == 0 { connection.close() }
        }

        func connection(_ connection: ClientConnection, canSubmit capacity: Int) {
            var budget = capacity
            if let limit = streamsUntilFirstSuccess, !hadSuccess { budget = min(budget, limit - requestOfStream.count) }
            if let limit = streamsUntilFirstAnswer, !hadAnswer { budget = min(budget, limit - requestOfStream.count) }
            while budget > 0, next < requests.count {
                let request = requests[next]
                guard let stream = connection.submit(method: request.method, path: request.path, headers: lists[next],
                                                     body: bodies[next], deadline: deadline) else { return }
                requestOfStream[stream] = next
                next += 1
                budget -= 1
            }
        }

        func connection(_ connection: ClientConnection, didReceive response: ResponseView, stream: Int) {
            guard let request = requestOfStream.removeValue(forKey: stream) else { return }
            if (200..<300).contains(response.status) { hadSuccess = true }
            hadAnswer = true
            results[request] = .response(status: response.status, headers: response.headers, body: response.bodyBytes)
            finishOne(connection)
        }

        func connection(_ connection: ClientConnection, didFail failure: StreamFailure, stream: Int) {
            guard let request = requestOfStream.removeValue(forKey: stream) else { return }
            results[request] = .failed(failure)
            finishOne(connection)
        }

        private func finishOne(_ connection: ClientConnection) {
            remaining -= 1
            if remaining == 0 { connection.close() }
        }

        func connection(_ connection: ClientConnection, didClose error: TransportError?, goAway: GoAwayInfo?) {
            if !opened { openError = error ?? .closed("before the connection opened") }
            loop.stop()
        }
    }
}

extension ClientConnection {
    /// `submit` with the path as a String, for the tests' hand-written requests (the product writes
    /// its paths into a reused buffer instead).
    public func submit(method: StaticString, path: String, headers: HeaderList, body: SharedBytes?, deadline: MonotonicInstant) -> Int? {
        var path = path
        return path.withUTF8 { submit(method: method, path: UnsafeRawBufferPointer($0), headers: headers, body: body, deadline: deadline) }
    }
}

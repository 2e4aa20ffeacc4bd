import APNs
import HTTP2
import IO
import Synchronization

/// A few requests on one connection, through the same pool, connection rules and classifier as a
/// fan-out's pushes: what `sokuho send`, `sokuho channels` and an event's broadcasts and channel
/// calls need. So a 429 or 503 is retried with back-off, a refused stream is resent, a GOAWAY or a
/// bad clock is judged the same way, whoever sends.
extension ConnectionPool {
    /// One request with a fixed `:path` (no device token appended).
    public struct Request: Sendable {
        public var method: HTTPMethod
        public var path: String
        public var headers: [HeaderField]
        /// Empty: no body (GET, DELETE).
        public var body: [UInt8]
        /// Whether it may be sent again when its outcome is unknown (see `PushGroup.resendUnknown`):
        /// false unless a duplicate is harmless.
        public var resendUnknown: Bool

        public init(method: HTTPMethod, path: String, headers: [HeaderField], body: [UInt8], resendUnknown: Bool = false) {
            self.method = method
            self.path = path
            self.headers = headers
            self.body = body
            self.resendUnknown = resendUnknown
        }

        /// A channel-management request. Only a delete is resent after an unknown outcome: a
        /// second create would make a second channel.
        public init(_ request: ChannelManagementRequest) {
            var resend = false
            if case .delete = request.operation { resend = true }
            self.init(method: request.method, path: request.path, headers: request.headers, body: request.body, resendUnknown: resend)
        }

        /// A broadcast. Never resent after an unknown outcome: a script's `send --channel` may
        /// carry an alert, and the fan-out counts each broadcast once.
        public init(_ request: BroadcastRequest) {
            self.init(method: BroadcastRequest.method, path: request.path, headers: request.headers, body: request.payload)
        }
    }

    /// What became of one request: its final outcome and the last answer, if one came.
    public struct Answer: Sendable {
        public var outcome: PushOutcome
        /// The HTTP status of the last response; 0 when none came.
        public var status: Int
        public var reason: Reason?
        /// The `apns-*` (and `retry-after`) headers of the last response.
        public var headers: [HeaderField]
        public var body: [UInt8]
        /// Why no response came, when none did (status 0).
        public var failure: String?

        public var succeeded: Bool { (200..<300).contains(status) }
        public var summary: String { failure ?? "\(status) \(reason?.name ?? "")" }
        public var response: Response { Response(status: status, headers: headers, body: body) }
    }

    /// Sends `requests` on one new connection and waits for every one's outcome, at most `timeout`
    /// in all (the deadline of each request, queued, retried or in flight). `configuration` names
    /// the endpoint, TLS and provider tokens; its connection count, threads and queue are sized here.
    /// Blocks the calling thread, which must not be an event loop's.
    public static func perform(_ requests: [Request], configuration: PoolConfiguration, timeout: Duration) -> [Answer] {
        guard !requests.isEmpty else { return [] }
        var configuration = configuration
        configuration.connections = 1
        configuration.threads = 1
        configuration.queueCapacity = requests.count
        configuration.streamsPerConnection = max(1, min(configuration.streamsPerConnection, requests.count))
        configuration.connectTimeout = min(configuration.connectTimeout, timeout)
        configuration.requestTimeout = min(configuration.requestTimeout, timeout)
        let deadline = MonotonicInstant.now() + timeout
        let answers = AnswerCollector(count: requests.count)
        let pool = ConnectionPool(configuration: configuration, sink: answers)
        pool.send(requests.enumerated().map { index, request in
            let group = PushGroup(label: request.path, headers: request.headers.map { ($0.name, $0.value) }, body: request.body,
                                  pathPrefix: request.path, method: request.method, deadline: deadline,
                                  resendUnknown: request.resendUnknown, keepsAnswer: true)
            // An empty token: the path is the prefix alone.
            return PushJob(token: DeviceTokenBytes(), group: group, id: UInt64(index))
        })
        // Every request ends by its deadline; the margin only covers the loop's last turn.
        pool.waitUntilFinished(timeout: timeout + .seconds(1))
        let halt = pool.haltMessage, connectionError = pool.lastConnectionError
        pool.shutdown()
        return answers.completed().map { completed in
            guard let completed else {
                return Answer(outcome: .unknown, status: 0, headers: [], body: [], failure: "no outcome within \(timeout.seconds) s")
            }
            let kept = completed.kept
            var answer = Answer(outcome: completed.outcome, status: completed.status, reason: completed.reason,
                                headers: kept?.headers ?? [], body: kept?.body ?? [])
            if completed.status == 0 {
                answer.failure = failure(of: completed.outcome, stream: kept?.failure, halt: halt, connection: connectionError, timeout: timeout)
            }
            return answer
        }
    }

    /// Why a request got no response, in the words of what ended it.
    private static func failure(of outcome: PushOutcome, stream: StreamFailure?, halt: String?, connection: TransportError?,
                                timeout: Duration) -> String {
        switch outcome {
        case .authOrConnectionFailure:
            return halt ?? connection.map { "\($0)" } ?? "the connection failed"
        case .expired:
            let cause = stream.map { "; last attempt: \($0)" } ?? connection.map { "; the connection failed: \($0)" } ?? ""
            return "timed out: no answer within \(timeout.seconds) s\(cause)"
        default:
            return "no answer: \(stream.map { "\($0)" } ?? connection.map { "\($0)" } ?? outcome.description)"
        }
    }

    /// Collects the outcomes by request index (on the loop thread; read once all are in).
    private final class AnswerCollector: PushOutcomeSink {
        private let slots: Mutex<[CompletedPush?]>

        init(count: Int) { slots = Mutex(Array(repeating: nil, count: count)) }

        func pushCompleted(_ push: CompletedPush) {
            slots.withLock { $0[Int(push.id)] = push }
        }

        func completed() -> [CompletedPush?] { slots.withLock { $0 } }
    }
}

import APNs
import HTTP2
import IO
import Vocabulary

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
        /// FCM's refusal (its code, action and field), on an FCM pool.
        public var fcm: FCMRefusalDetail?
        /// The `apns-*` (and `retry-after`) headers of the last response.
        public var headers: [HeaderField]
        public var body: [UInt8]
        /// Why no response came, when none did (status 0).
        public var failure: String?

        public var succeeded: Bool { (200..<300).contains(status) }
        public var summary: String { failure ?? "\(status) \(reason?.name ?? "")" }
        public var response: Response { Response(status: status, headers: headers, body: body) }

        /// A request that reached no outcome by its deadline (or whose pool shut down first).
        static func noOutcome(within timeout: Duration) -> Answer {
            Answer(outcome: .unknown, status: 0, headers: [], body: [], failure: "no outcome within \(timeout.seconds) s")
        }
    }

    /// Sends `requests` on this pool (a kept one: the daemon's channel-host connection, an app's
    /// warm pool for broadcasts) and calls `completion` once with every answer, in order, on a loop
    /// thread: it must not block. Each request ends by `deadline` (queued, retried or in flight).
    /// Never waits, so an API thread may call it, provided it bounds how many it has outstanding
    /// (the pool's queue waits when full).
    public func submit(_ requests: [Request], deadline: MonotonicInstant, completion: @escaping @Sendable ([Answer]) -> Void) {
        guard !requests.isEmpty else { return completion([]) }
        let timeout = deadline - MonotonicInstant.now()
        let collector = AnswerCollector(count: requests.count, calls: calls) { [self] completed in
            completion(Self.answers(completed, halt: haltMessage, connection: lastConnectionError, timeout: timeout))
        }
        calls.add(collector)
        // A pool shut down (or shutting down) sends nothing more: the call ends with no outcome.
        guard !isShutDown else { return collector.abandon() }
        send(requests.enumerated().map { index, request in
            let group = PushGroup(label: request.path, headers: request.headers.map { ($0.name, $0.value) }, body: request.body,
                                  pathPrefix: request.path, method: request.method, deadline: deadline,
                                  resendUnknown: request.resendUnknown, keepsAnswer: true, sink: collector)
            // An empty token: the path is the prefix alone.
            return PushJob(token: DeviceToken(), group: group, id: UInt64(index))
        })
    }

    /// `submit`, waiting for the answers on the calling thread (never a loop's of this pool).
    public func perform(_ requests: [Request], timeout: Duration) -> [Answer] {
        let done = ConditionLock()
        let result = Lock<[Answer]?>(nil)
        submit(requests, deadline: MonotonicInstant.now() + timeout) { answers in
            done.withLock {
                result.withLock { $0 = answers }
                done.broadcast()
            }
        }
        // Every request ends by its deadline; the margin only covers the loop's last turn.
        let end = MonotonicInstant.now() + timeout + .seconds(1)
        return done.withLock {
            while result.withLock({ $0 }) == nil, done.wait(until: end) {}
            return result.withLock { $0 } ?? requests.map { _ in .noOutcome(within: timeout) }
        }
    }

    /// Sends `requests` on one new connection and waits for every one's outcome, at most `timeout`
    /// in all (the deadline of each request, queued, retried or in flight), then closes it: what a
    /// one-off command (`sokuho send`, `sokuho channels`) needs. `configuration` names the
    /// endpoint, TLS and provider tokens; its connection count, threads and queue are sized here.
    /// Blocks the calling thread, which must not be an event loop's.
    public static func perform(_ requests: [Request], configuration: PoolConfiguration, timeout: Duration) throws(TransportError) -> [Answer] {
        guard !requests.isEmpty else { return [] }
        let pool = try ConnectionPool(configuration: oneOff(configuration, requests: requests.count, timeout: timeout))
        defer { pool.shutdown() }
        return pool.perform(requests, timeout: timeout)
    }

    /// `configuration` sized for a few requests on one connection and one thread.
    public static func oneOff(_ configuration: PoolConfiguration, requests: Int, timeout: Duration) -> PoolConfiguration {
        var configuration = configuration
        configuration.connections = 1
        configuration.threads = 1
        configuration.queueCapacity = max(1, requests)
        configuration.streamsPerConnection = max(1, min(configuration.streamsPerConnection, requests))
        configuration.connectTimeout = min(configuration.connectTimeout, timeout)
        configuration.requestTimeout = min(configuration.requestTimeout, timeout)
        return configuration
    }

    private static func answers(_ completed: [CompletedPush?], halt: String?, connection: TransportError?, timeout: Duration) -> [Answer] {
        completed.map { completed in
            guard let completed else { return .noOutcome(within: timeout) }
            let kept = completed.kept
            var answer = Answer(outcome: completed.outcome, status: completed.status, reason: completed.reason, fcm: completed.fcm,
                                headers: kept?.headers ?? [], body: kept?.body ?? [])
            if completed.status == 0 {
                answer.failure = failure(of: completed.outcome, stream: kept?.failure, halt: halt, connection: connection, timeout: timeout)
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

    /// Collects one call's outcomes by request index (on the loop threads) and hands them over
    /// once the last is in, or when the pool shuts down first (`OutstandingCalls.abandonAll`).
    final class AnswerCollector: PushOutcomeSink {
        private let slots: Lock<(answers: [CompletedPush?], missing: Int)>
        private let completion: @Sendable ([CompletedPush?]) -> Void
        private let calls: OutstandingCalls  // until completed: `finish` removes the call from it

        init(count: Int, calls: OutstandingCalls, completion: @escaping @Sendable ([CompletedPush?]) -> Void) {
            slots = Lock((Array(repeating: nil, count: count), count))
            self.calls = calls
            self.completion = completion
        }

        func pushCompleted(_ push: CompletedPush) {
            let all = slots.withLock { slots -> [CompletedPush?]? in
                guard slots.missing > 0, slots.answers[Int(push.id)] == nil else { return nil }
                slots.answers[Int(push.id)] = push
                slots.missing -= 1
                return slots.missing == 0 ? Self.take(&slots.answers) : nil
            }
            if let all { finish(all) }
        }

        /// Completes with what came; the rest have no outcome.
        func abandon() {
            let all = slots.withLock { slots -> [CompletedPush?]? in
                guard slots.missing > 0 else { return nil }
                slots.missing = 0
                return Self.take(&slots.answers)
            }
            if let all { finish(all) }
        }

        /// The answers, leaving none behind: a completed push holds its group, whose sink is this
        /// collector, so keeping them would keep both alive for ever.
        private static func take(_ answers: inout [CompletedPush?]) -> [CompletedPush?] {
            defer { answers = [] }
            return answers
        }

        private func finish(_ all: [CompletedPush?]) {
            calls.remove(self)
            completion(all)
        }
    }
}

/// The request calls of a pool not yet completed: a shutdown completes them, so a caller waiting
/// for an answer (an API request deferred on it) always gets one.
final class OutstandingCalls: Sendable {
    private let calls = Lock<[ObjectIdentifier: ConnectionPool.AnswerCollector]>([:])

    func add(_ call: ConnectionPool.AnswerCollector) { calls.withLock { $0[ObjectIdentifier(call)] = call } }
    func remove(_ call: ConnectionPool.AnswerCollector) { _ = calls.withLock { $0.removeValue(forKey: ObjectIdentifier(call)) } }

    func abandonAll() {
        for call in calls.withLock({ calls in defer { calls.removeAll() }; return Array(calls.values) }) { call.abandon() }
    }
}

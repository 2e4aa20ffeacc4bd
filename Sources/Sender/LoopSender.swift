#if canImport(Glibc)
import Glibc
#endif
import APNs
import Crypto
import HTTP2
import Synchronization

/// The sending engine of one event-loop thread: owns its connections, pulls jobs from its queue,
/// submits them as stream capacity frees up, and turns every response or failure into a retry, a
/// resend or one final outcome. Everything here runs on the loop thread; only `queue`, `finished`
/// and the counters snapshot are shared.
final class LoopSender: EventLoopSource, ClientConnectionDelegate, @unchecked Sendable {
    // @unchecked: all mutable state is confined to `loop`'s thread; cross-thread parts are Mutex/Atomic.
    let loop: EventLoop
    let queue: JobQueue
    private let configuration: PoolConfiguration
    private weak var sink: PushOutcomeSink?
    private let pool: PoolState

    private var slots: [PooledConnection] = []
    private var ready: JobRing
    private var delayed: DelayedJobs
    /// Jobs in flight, by stream tag.
    private var inflight: [PushJob?]
    private var freeTags: [Int]
    private var counters = SenderCounters()
    private var latencies = LatencyHistogram()
    private var random = FastRandom(seed: RandomSource.shared.next())
    /// `:path` of the push being submitted (prefix + hex token); grows when a group's prefix needs more.
    private var pathBuffer: UnsafeMutablePointer<UInt8>
    private var pathCapacity = 512
    private var lastTokenCheck: UInt64 = 0
    /// Whether this loop has told the pool which token generation APNs accepted first.
    private var recordedAcceptedToken = false
    /// Final outcomes recorded by this loop (read by producers to know when all is done).
    let finished = Atomic<Int>(0)
    private let snapshot = Mutex<(SenderCounters, LatencyHistogram?)>((SenderCounters(), nil))

    final class PooledConnection {
        let connection: ClientConnection
        var lease: ProviderTokenLease?
        var reconnectAt: UInt64 = 0
        var backoff: UInt64 = 0
        var retire = false
        /// Connection attempts that failed in a row (reset when one opens), and whether this
        /// connection has told the pool it cannot reach the server.
        var failuresInARow = 0
        var gaveUp = false
        init(_ connection: ClientConnection) { self.connection = connection }
    }

    init(loop: EventLoop, connections: Int, configuration: PoolConfiguration, sink: PushOutcomeSink?, pool: PoolState) {
        self.loop = loop
        self.configuration = configuration
        self.sink = sink
        self.pool = pool
        queue = JobQueue(capacity: configuration.queueCapacity)
        ready = JobRing(capacity: configuration.queueCapacity)
        let maximumInflight = max(1, connections) * max(1, configuration.streamsPerConnection)
        delayed = DelayedJobs(capacity: maximumInflight)
        inflight = Array(repeating: nil, count: maximumInflight)
        freeTags = Array((0..<maximumInflight).reversed())
        pathBuffer = .allocate(capacity: pathCapacity)
        for _ in 0..<connections {
            var options = ClientConnectionOptions(host: configuration.host, port: configuration.port, tls: configuration.tls)
            options.maximumStreams = configuration.streamsPerConnection
            options.serverName = configuration.serverName
            options.pingAfterSilence = configuration.pingAfterSilence
            options.pingTimeout = configuration.pingTimeout
            options.connectTimeout = configuration.connectTimeout
            if let resolver = configuration.resolver { options.resolver = resolver }
            let connection = ClientConnection(loop: loop, options: options)
            slots.append(PooledConnection(connection))
        }
        for slot in slots { slot.connection.delegate = self }
    }

    deinit { pathBuffer.deallocate() }

    var fileDescriptor: Int32 { -1 }

    /// Counters and latencies as of the last loop turn.
    func read() -> (SenderCounters, LatencyHistogram?) { snapshot.withLock { $0 } }

    /// Publishes the counters (cheap; called when work finishes, not per push).
    func publishNow() { publish(withLatencies: true) }

    /// Closes every connection (pool shutdown).
    func closeAll() { for slot in slots { slot.connection.close() } }

    private func publish(withLatencies: Bool) {
        let counters = self.counters
        let latencies = withLatencies ? self.latencies : nil
        snapshot.withLock { $0 = (counters, latencies ?? $0.1) }
    }

    // MARK: EventLoopSource

    func prepare(now: UInt64) -> Bool {
        while let job = delayed.popDue(now: now) {
            if ready.free == 0 { delayed.insert(job); break }
            ready.pushBack(job)
        }
        if ready.count < ready.free { _ = queue.drain(into: &ready, limit: ready.free) }
        // A deadline holds while a push waits, too: with no connection open or every stream busy,
        // queued pushes would otherwise outlive it (and `waitUntilFinished` with them).
        if let earliest = ready.earliestDeadline, earliest <= now {
            var expired: [PushJob] = []  // collected first: `finish` reads `ready`, which `expire` is mutating
            ready.expire(now: now) { expired.append($0) }
            for job in expired { finish(job, .expired, status: 0, reason: nil, timestamp: nil, now: now) }
        }
        if pool.halted.load(ordering: .relaxed) { failEverythingQueued(now: now) }
        let hasWork = !ready.isEmpty || !delayed.isEmpty || inflightCount > 0
        if hasWork { openConnectionsIfNeeded(now: now) }
        return false
    }

    func handle(events: UInt32, now: UInt64) {}

    func tick(now: UInt64) {
        if now &- lastTokenCheck > 1_000_000_000 {
            lastTokenCheck = now
            publish(withLatencies: false)
        }
    }

    private var inflightCount: Int { inflight.count - freeTags.count }

    // MARK: Connections

    private func openConnectionsIfNeeded(now: UInt64) {
        for slot in slots {
            let state = slot.connection.state
            guard state == .idle || state == .closed, now >= slot.reconnectAt, !pool.halted.load(ordering: .relaxed) else { continue }
            // A new connection starts on the current generation when it first sends (presentProviderToken).
            slot.lease = nil
            slot.retire = false
            slot.connection.connect()
        }
    }

    /// Picks the provider token for the requests about to go out on `connection`, and sets its header
    /// only when the generation changed. Called when sending, not on a timer: the lease is stamped at
    /// the token's first use, so the 20 minutes APNs wants between changes count from what it saw.
    /// False when no token can be signed (the pool is halted then).
    private func presentProviderToken(on connection: ClientConnection) -> Bool {
        guard let source = configuration.providerTokens, let slot = slots.first(where: { $0.connection === connection }) else { return true }
        let presented = slot.lease?.generation
        do {
            let token = try source.token(for: &slot.lease)
            if token.generation != presented { connection.setAuthorization(token.authorization) }
            return true
        } catch {
            pool.halt(.authOrConnectionFailure, message: "cannot sign a provider token: \(error)")
            return false
        }
    }

    func connectionDidOpen(_ connection: ClientConnection) {
        counters.connectionsOpened += 1
        pool.connectionOpened()
        if let slot = slots.first(where: { $0.connection === connection }) { slot.failuresInARow = 0 }
    }

    func connection(_ connection: ClientConnection, didClose error: TransportError?, goAway: GoAwayInfo?) {
        guard let slot = slots.first(where: { $0.connection === connection }) else { return }
        let now = MonotonicClock.nanoseconds()
        if let goAway {
            counters.goAways += 1
            // APNs may say why in the GOAWAY's JSON. Only a reason known to mean "fix the credentials
            // or configuration" stops the pool; a reason that asks for a new connection
            // (ExpiredProviderToken, UnrelatedKeyIdInToken), one we do not know, or none at all is a
            // drain: reconnect with back-off, resend what was provably unprocessed.
            if let reason = ErrorBody.goAwayReason(debugData: goAway.debugData), reason.action == .fixCredentials {
                pool.halt(.authOrConnectionFailure, message: "APNs closed the connection: GOAWAY \(reason.name)")
            }
        }
        let answered = connection.responsesReceived > 0
        if (error == nil || slot.retire) && answered {
            // A clean GOAWAY or a retirement after real work: a fresh connection right away.
            slot.backoff = 0
            slot.reconnectAt = now
            return
        }
        // A failure, or a connection that closed before answering anything: back off (1 s → 60 s)
        // so a server that refuses us at once is not hammered with new connections.
        if error != nil { counters.connectionFailures += 1 }
        if let error, !answered && connection.streamsSubmitted == 0 {
            // Counted per connection: one failure of one connection (a DNS blip) is retried.
            slot.failuresInARow += 1
            if slot.failuresInARow >= configuration.failFastAfterAttempts && !slot.gaveUp {
                slot.gaveUp = true
                pool.connectionGaveUp(error)
            }
        }
        if answered && connection.hadSuccess {
            slot.backoff = configuration.reconnectInitial
        } else {
            slot.backoff = slot.backoff == 0 ? configuration.reconnectInitial : min(configuration.reconnectMaximum, slot.backoff * 2)
        }
        slot.reconnectAt = now &+ slot.backoff
    }

    // MARK: Submitting

    func connection(_ connection: ClientConnection, canSubmit capacity: Int) {
        guard !pool.halted.load(ordering: .relaxed), !ready.isEmpty, presentProviderToken(on: connection) else { return }
        let now = MonotonicClock.nanoseconds()
        var budget = capacity
        while budget > 0, let popped = ready.popFront() {
            var job = popped
            if job.group.deadline != 0 && job.group.deadline <= now {
                finish(job, .expired, status: 0, reason: nil, timestamp: nil, now: now)
                continue
            }
            guard let tag = freeTags.popLast() else { ready.pushFront(job); return }
            let prefix = job.group.pathPrefix
            if prefix.count + 2 * DeviceTokenBytes.capacity > pathCapacity { growPathBuffer(to: prefix.count + 2 * DeviceTokenBytes.capacity) }
            let length = prefix.withUnsafeBufferPointer { p -> Int in
                pathBuffer.update(from: p.baseAddress!, count: p.count)
                return p.count + job.token.writeHex(to: pathBuffer + p.count)
            }
            var deadline = now &+ configuration.requestTimeout
            if job.group.deadline != 0 { deadline = min(deadline, job.group.deadline) }
            if job.firstSubmitted == 0 { job.firstSubmitted = now }
            let submitted = connection.submit(method: "POST", path: UnsafeRawBufferPointer(start: pathBuffer, count: length),
                                              headers: job.group.headers, body: job.group.body, deadline: deadline, tag: UInt64(tag))
            guard submitted else {
                freeTags.append(tag)
                ready.pushFront(job)
                return
            }
            inflight[tag] = job
            budget -= 1
        }
    }

    func connection(_ connection: ClientConnection, didReceive response: ResponseView, tag: UInt64) {
        guard let job = inflight[Int(tag)].take() else { return }
        freeTags.append(Int(tag))
        let now = MonotonicClock.nanoseconds()
        let isSuccess = (200..<300).contains(response.status)
        let error = isSuccess ? ErrorBody(reason: nil, timestamp: nil) : ErrorBody(json: response.bodyBytes)
        if isSuccess && !recordedAcceptedToken { recordAcceptedToken(on: connection) }
        if let reason = error.reason, reason == .expiredProviderToken || reason == .invalidProviderToken,
           let diagnosis = clockDiagnosis(reason, on: connection) {
            // A wrong clock does not fix itself by reconnecting: stop once, saying what to fix.
            pool.halt(.authOrConnectionFailure, message: diagnosis)
            finish(job, .authOrConnectionFailure, status: response.status, reason: reason.name, timestamp: nil, now: now)
            return
        }
        let retryAfter = isSuccess ? nil : response.retryAfterSeconds.map { UInt64($0) * 1_000_000_000 }
        let disposition = configuration.retry.decide(status: response.status, reason: error.reason, attempts: Int(job.attempts) + 1,
                                                     resends: Int(job.resends), random: nextRandom(), retryAfter: retryAfter)
        apply(disposition, to: job, connection: connection, status: response.status, reason: error.reason?.name,
              timestamp: error.timestamp, now: now)
    }

    func connection(_ connection: ClientConnection, didFail failure: StreamFailure, tag: UInt64) {
        guard let job = inflight[Int(tag)].take() else { return }
        freeTags.append(Int(tag))
        let now = MonotonicClock.nanoseconds()
        let disposition = configuration.retry.decide(failure: failure, resendUnknown: job.group.resendUnknown, resends: Int(job.resends))
        apply(disposition, to: job, connection: connection, status: 0, reason: nil, timestamp: nil, now: now)
    }

    private func apply(_ disposition: Disposition, to original: PushJob, connection: ClientConnection, status: Int,
                       reason: String?, timestamp: Int64?, now: UInt64) {
        var job = original
        switch disposition {
        case let .finish(outcome):
            finish(job, outcome, status: status, reason: reason, timestamp: timestamp, now: now)
        case let .haltPool(outcome):
            pool.halt(outcome, message: "APNs refused the credentials or configuration: \(status) \(reason ?? "")")
            finish(job, outcome, status: status, reason: reason, timestamp: timestamp, now: now)
        case let .retry(delay):
            job.attempts += 1
            counters.retries += 1
            requeue(job, after: delay, now: now, status: status, reason: reason)
        case .resendRefused:
            job.resends += 1
            counters.refusedResends += 1
            requeue(job, after: 0, now: now, status: status, reason: reason)
        case .resendUnknown:
            job.resends += 1
            job.resentAfterUnknown = true
            counters.unknownResends += 1
            requeue(job, after: 0, now: now, status: status, reason: reason)
        case let .resendOnNewConnection(delay):
            job.resends += 1
            counters.refusedResends += 1
            if let slot = slots.first(where: { $0.connection === connection }) {
                slot.retire = true
                connection.close()
            }
            requeue(job, after: delay, now: now, status: status, reason: reason)
        }
    }

    private func requeue(_ job: PushJob, after delay: UInt64, now: UInt64, status: Int, reason: String?) {
        var job = job
        if job.group.deadline != 0 && now &+ delay >= job.group.deadline {
            finish(job, .expired, status: status, reason: reason, timestamp: nil, now: now)
            return
        }
        if delay == 0 && ready.free > 0 {
            ready.pushFront(job)
        } else {
            job.notBefore = now &+ delay
            delayed.insert(job)
        }
    }

    private func finish(_ job: PushJob, _ outcome: PushOutcome, status: Int, reason: String?, timestamp: Int64?, now: UInt64) {
        counters[outcome] += 1
        if job.firstSubmitted != 0 { latencies.record(nanoseconds: now &- job.firstSubmitted) }
        if let sink {
            sink.pushCompleted(CompletedPush(token: job.token, id: job.id, group: job.group, outcome: outcome, status: status,
                                             reason: reason, timestamp: timestamp, resentAfterUnknown: job.resentAfterUnknown))
        }
        finished.add(1, ordering: .releasing)
        if ready.isEmpty && inflightCount == 0 && delayed.isEmpty { publish(withLatencies: true) }
    }

    /// After a halt: every job still queued here ends as the halt's outcome without being sent.
    private func failEverythingQueued(now: UInt64) {
        let outcome = pool.haltOutcome
        while let job = ready.popFront() { finish(job, outcome, status: 0, reason: nil, timestamp: nil, now: now) }
        while let job = delayed.popDue(now: UInt64.max) { finish(job, outcome, status: 0, reason: nil, timestamp: nil, now: now) }
        for slot in slots where slot.connection.state == .open { slot.connection.close() }
        publish(withLatencies: true)
    }

    private func nextRandom() -> Double { random.unitInterval() }

    /// Notes the first provider-token generation APNs accepted (once per loop, not per push), so a
    /// later InvalidProviderToken can tell "the new token is refused" from "no token ever worked".
    private func recordAcceptedToken(on connection: ClientConnection) {
        guard configuration.providerTokens != nil else { recordedAcceptedToken = true; return }
        guard let generation = slots.first(where: { $0.connection === connection })?.lease?.generation else { return }
        pool.tokenAccepted(generation: generation)
        recordedAcceptedToken = true
    }

    /// Whether APNs' refusal of this connection's provider token points at this machine's clock
    /// (see `ProviderTokenClockDiagnosis`); the message to halt with, or nil.
    private func clockDiagnosis(_ reason: Reason, on connection: ClientConnection) -> String? {
        guard let source = configuration.providerTokens,
              let generation = slots.first(where: { $0.connection === connection })?.lease?.generation else { return nil }
        let issuedAt = Int64(generation) * ProviderTokenSource.window.components.seconds
        return ProviderTokenClockDiagnosis.diagnose(reason: reason.name, issuedAt: issuedAt, now: source.currentSeconds,
                                                    earlierTokenAccepted: pool.acceptedTokenBefore(generation: generation))
    }

    /// A group whose `:path` prefix is longer than the buffer: grow it once (not per push).
    private func growPathBuffer(to capacity: Int) {
        pathBuffer.deallocate()
        pathCapacity = capacity
        pathBuffer = .allocate(capacity: capacity)
    }
}

#if canImport(Glibc)
import Glibc
#endif
import APNs
import Crypto
import FCM
import HTTP2
import IO
import Synchronization
import Vocabulary

/// The sending engine of one event-loop thread: owns its connections, pulls jobs from its queue,
/// submits them as stream capacity frees up, and turns every response or failure into a retry, a
/// resend or one final outcome. Everything here runs on the loop thread; only `queue`, `finished`
/// and the counters snapshot are shared. The APNs connection rules live here, not in HTTP2: one
/// stream until a push succeeds, the provider-token generation of each connection, the liveness
/// settings, which response headers matter (connections are managed in LoopSender+Connections).
final class LoopSender: EventLoopSource, ClientConnectionDelegate, @unchecked Sendable {
    // @unchecked: all mutable state is confined to `loop`'s thread; cross-thread parts are Lock/Atomic.
    let loop: EventLoop
    let queue: JobQueue
    /// Jobs that go ahead of everything queued (an earthquake start while an election update fans out).
    let urgentQueue: JobQueue
    let configuration: PoolConfiguration
    weak var sink: PushOutcomeSink?
    let pool: PoolState

    var slots: [PooledConnection] = []
    var ready: JobRing
    var delayed: DelayedJobs
    var counters = SenderCounters()
    var latencies = LatencyHistogram()
    private var random = FastRandom(seed: RandomSource.shared.next())
    /// `:path` of the push being submitted (prefix + hex token); grows when a group's prefix needs more.
    private var pathBuffer: UnsafeMutablePointer<UInt8>
    private var pathCapacity = 512
    /// An FCM push's body (its group's template around its token), written here per push and
    /// copied into its stream's buffer: allocated on the first FCM group, `bodyCapacity` bytes
    /// (`spliceBody`, LoopSender+FCM).
    var bodyBuffer: UnsafeMutableRawPointer?
    var bodyCapacity = 0
    /// An FCM pool's access tokens (nil: APNs); answers are then judged by FCM's rules (LoopSender+FCM).
    let accessTokens: FCMAccessTokenSource?
    /// The per-request limit once sent, in nanoseconds (converted once: this is added per push).
    private let requestTimeout: UInt64
    /// Wakes the loop for the next delayed job or reconnect (the loop otherwise sleeps until I/O).
    lazy var wakeTimer = LoopTimer { _ in }
    /// Whether this loop has told the pool which token generation APNs accepted first.
    var recordedAcceptedToken = false
    /// Final outcomes recorded by this loop (read by producers to know when all is done).
    let finished = Atomic<Int>(0)
    /// Connections connecting or open in a slot (the pool's `connectionsUp`; its shutdown waits until none is).
    let liveConnections = Atomic<Int>(0)
    /// Connections draining beside their replacement (see `replaceDrainingConnections`): not in a
    /// slot any more, still open until their last stream ends (a shutdown waits for them too).
    let drainingConnections = Atomic<Int>(0)
    /// Whether work ever came (see `PoolConfiguration.warmOnceUsed`).
    private var everUsed = false
    /// Whether connections are kept open and reconnected while there is no work.
    private var warm: Bool { configuration.keepWarm && (everUsed || !configuration.warmOnceUsed) }
    /// Set by `closeAll`: nothing reconnects or is replaced any more.
    var closing = false
    /// How every connection of this loop is made (a replacement is made the same way).
    private let connectionOptions: ClientConnectionOptions
    /// The loop's share of the pool's connections: `slots` beyond it hold drains and spares.
    let slotCount: Int
    /// Connections draining beside their replacement at most, per slot (see `replaceDrainingConnections`).
    static let drainsPerSlot = 8
    private let snapshot = Lock<(SenderCounters, LatencyHistogram?)>((SenderCounters(), nil))

    /// One connection and what the sender keeps about it: its pushes in flight, by stream handle
    /// (the connection's stream table is the one index), its token lease and its reconnect state.
    /// `slots` holds the loop's share of the pool's connections (`replaced` false) and, after them,
    /// connections draining beside their replacement or closed and kept for the next replacement
    /// (`replaced` true); `ownerIndex` of each connection is its index here.
    final class PooledConnection {
        let connection: ClientConnection
        var jobs: [PushJob?]
        var inFlight = 0
        var lease: ProviderTokenLease?
        /// FCM: the access-token generation this connection's `authorization` carries (0: none yet).
        var accessTokenGeneration = 0
        /// APNs allows one stream on a new token connection until a push is accepted (APNS.md §6).
        var hadSuccess = false
        /// The streams the server granted when last looked at (`ClientConnection.grantedStreams`;
        /// nil: not yet, counted as configured), as told to the pool's gate.
        var grant: Int?
        var reconnectAt = MonotonicInstant(nanoseconds: 0)
        var backoff: Duration = .zero
        var retire = false
        /// Connection attempts that failed in a row (reset when one opens), and whether this
        /// connection has told the pool it cannot reach the server.
        var failuresInARow = 0
        var gaveUp = false
        /// Out of the slot: draining beside its replacement (no new pushes; its streams end by an
        /// answer or their deadline, then it closes), or closed and spare. Its reconnect state
        /// moved to the replacement.
        var replaced = false
        /// When it left its slot to drain (the oldest drain ends first when there are too many).
        var drainingSince = MonotonicInstant(nanoseconds: 0)
        init(_ connection: ClientConnection, streams: Int) {
            self.connection = connection
            jobs = Array(repeating: nil, count: max(1, streams))
        }
    }

    /// Response headers a sender reads: APNs' ids and reasons, and Retry-After.
    static let keptResponseHeaders = ["apns-", "retry-after"]

    /// The pool's gate and this loop's index in it: the gate follows the streams the servers grant.
    let grants: (gate: HandOutGate, loop: Int)?

    init(loop: EventLoop, connections: Int, configuration: PoolConfiguration, sink: PushOutcomeSink?, pool: PoolState,
         grants: (gate: HandOutGate, loop: Int)? = nil) {
        self.loop = loop
        self.grants = grants
        self.configuration = configuration
        self.sink = sink
        self.pool = pool
        queue = JobQueue(capacity: configuration.queueCapacity)
        // Urgent jobs are the exception: a quarter of the ring is plenty (producers wait when it is
        // full, as for the bulk queue), and every pool pays for it in memory.
        urgentQueue = JobQueue(capacity: max(1024, configuration.queueCapacity / 4))
        ready = JobRing(capacity: configuration.queueCapacity)
        delayed = DelayedJobs(capacity: max(1, connections) * max(1, configuration.streamsPerConnection))
        pathBuffer = .allocate(capacity: pathCapacity)
        accessTokens = configuration.provider.accessTokens
        requestTimeout = configuration.requestTimeout.nanoseconds
        var options = configuration.endpoint.connectionOptions
        options.maximumStreams = configuration.streamsPerConnection
        options.pingAfterSilence = configuration.pingAfterSilence
        options.pingTimeout = configuration.pingTimeout
        if configuration.keepWarm { options.pingAfterIdle = configuration.keepalive }
        options.keptResponseHeaders = Self.keptResponseHeaders
        connectionOptions = options
        slotCount = connections
        for _ in 0..<connections { addConnection() }
    }

    /// A new connection at the end of `slots` (idle: `openConnectionsIfNeeded` connects it).
    @discardableResult
    func addConnection() -> PooledConnection {
        let connection = ClientConnection(loop: loop, options: connectionOptions)
        connection.ownerIndex = slots.count
        connection.delegate = self
        let slot = PooledConnection(connection, streams: configuration.streamsPerConnection)
        slots.append(slot)
        return slot
    }

    deinit {
        pathBuffer.deallocate()
        bodyBuffer?.deallocate()
    }

    var fileDescriptor: Int32 { -1 }

    /// Counters and latencies as published last.
    func read() -> (SenderCounters, LatencyHistogram?) { snapshot.withLock { $0 } }

    /// Publishes the counters (cheap; called when work finishes, not per push).
    func publishNow() { publish(withLatencies: true) }

    func publish(withLatencies: Bool) {
        let counters = self.counters
        let latencies = withLatencies ? self.latencies : nil
        snapshot.withLock { $0 = (counters, latencies ?? $0.1) }
    }

    var inflightCount: Int { slots.reduce(0) { $0 + $1.inFlight } }
    var idle: Bool { ready.isEmpty && delayed.isEmpty && inflightCount == 0 }

    // MARK: EventLoopSource

    func prepare(now: MonotonicInstant) -> Bool {
        while let job = delayed.popDue(now: now.nanoseconds) {
            if ready.free == 0 { delayed.insert(job); break }
            ready.pushBack(job)
        }
        // A deadline holds while a push waits, too: with no connection open or every stream busy,
        // queued pushes would otherwise outlive it (and `waitUntilFinished` with them). Expiring
        // makes room, so refill and expire again until the queue yields live jobs or none.
        while true {
            expireQueued(now: now)
            // Urgent jobs go to the front of the ready ring, ahead of what bulk events queued.
            let urgent = ready.free > 0 ? urgentQueue.drainToFront(of: &ready, limit: ready.free) : 0
            guard urgent > 0 || (ready.free > 0 && queue.drain(into: &ready, limit: ready.free) > 0) else { break }
            pool.queueDrained()
            guard let earliest = ready.earliestDeadline, earliest <= now.nanoseconds else { break }
        }
        if !idle { everUsed = true }
        if !idle || warm { openConnectionsIfNeeded(now: now) }
        // After opening: a connection that fails at once (a bad port) may be the one that halts the pool.
        if pool.halted.load(ordering: .relaxed) { failEverythingQueued(now: now) }
        armWakeTimer()
        return false
    }

    private func expireQueued(now: MonotonicInstant) {
        guard let earliest = ready.earliestDeadline, earliest <= now.nanoseconds else { return }
        var expired: [PushJob] = []  // collected first: `finish` reads `ready`, which `expire` is mutating
        ready.expire(now: now.nanoseconds) { expired.append($0) }
        for job in expired { finish(job, .expired, status: 0, reason: nil, timestamp: nil, now: now) }
    }

    func handle(events: UInt32, now: MonotonicInstant) {}

    /// The loop sleeps until I/O or its earliest timer: wake it for the next delayed job, the next
    /// reconnect, and the earliest queued deadline.
    func armWakeTimer() {
        // A due back-off only matters when the ready ring has room for it (else submitting or
        // expiring makes room first, and both wake the loop): no spinning on a full ring.
        var next = ready.free > 0 ? delayed.nextDue.map { MonotonicInstant(nanoseconds: $0) } ?? .distantFuture : .distantFuture
        if let earliest = ready.earliestDeadline { next = min(next, MonotonicInstant(nanoseconds: earliest)) }
        // Paused (FCM's quota): the connections hold back until the pause ends, then send.
        if !ready.isEmpty, let end = pool.pauseEnd { next = min(next, end) }
        // Held by the messages-a-minute limit: wake when the next message may go.
        if !ready.isEmpty, let limiter = pool.rateLimiter, let at = limiter.nextAvailable(now: MonotonicInstant.now()) { next = min(next, at) }
        if (!idle || warm) && !pool.halted.load(ordering: .relaxed) && !closing {
            for slot in slots where !slot.replaced && (slot.connection.state == .idle || slot.connection.state == .closed) {
                next = min(next, slot.reconnectAt)
            }
        }
        if next < .distantFuture {
            if wakeTimer.deadline != next { loop.arm(wakeTimer, at: next) }
        } else if wakeTimer.isArmed {
            loop.disarm(wakeTimer)
        }
    }

    // MARK: Submitting

    func connection(_ connection: ClientConnection, canSubmit capacity: Int) {
        guard !pool.halted.load(ordering: .relaxed), !ready.isEmpty else { return }
        let slot = slots[connection.ownerIndex]
        // APNs: one stream on a new connection until a push is accepted (FCM too: a server's first
        // SETTINGS may lower the streams, and a burst into them comes back refused); and nothing
        // more on a connection whose liveness PING is unanswered (is the peer still there?).
        var budget = slot.hadSuccess ? capacity : min(capacity, 1 - slot.inFlight)
        if connection.isPingOutstanding { budget = 0 }
        guard budget > 0, pool.pauseEnd == nil, presentProviderToken(on: slot) else { return }
        let now = MonotonicInstant.now()
        if let limiter = pool.rateLimiter {
            budget = limiter.take(upTo: min(budget, ready.count), now: now)
            guard budget > 0 else { armWakeTimer(); return }
        }
        // What the limit granted and the queue did not use goes back to it.
        defer { pool.rateLimiter?.giveBack(budget) }
        while budget > 0, let popped = ready.popFront() {
            var job = popped
            if let expiry = job.group.deadline, expiry <= now {
                finish(job, .expired, status: 0, reason: nil, timestamp: nil, now: now)
                continue
            }
            let prefix = job.group.pathPrefix
            let template = job.group.bodyTemplate
            if prefix.count + 2 * DeviceToken.capacity > pathCapacity { growPathBuffer(to: prefix.count + 2 * DeviceToken.capacity) }
            let length = prefix.withUnsafeBufferPointer { p -> Int in
                pathBuffer.update(from: p.baseAddress!, count: p.count)
                // APNs: the token is the path's end; FCM: the path is the project's, the token in the body.
                return template == nil ? p.count + job.token.writeHex(to: pathBuffer + p.count) : p.count
            }
            var deadline = now.advanced(byNanoseconds: requestTimeout)
            if let expiry = job.group.deadline { deadline = min(deadline, expiry) }
            if job.firstSubmitted == 0 { job.firstSubmitted = now.nanoseconds }
            let path = UnsafeRawBufferPointer(start: pathBuffer, count: length)
            let submitted: Int?
            if let template {
                // The TTL is what is left of the deadline as the message is written (checked above:
                // not passed), not what was left when the group was rendered.
                let left = job.group.deadline.map { Int64(($0.nanoseconds - now.nanoseconds) / 1_000_000_000) }
                let body = spliceBody(template, token: job.token, ttlSeconds: left)
                submitted = connection.submit(method: job.group.method, path: path, headers: job.group.headers, copying: body, deadline: deadline)
            } else {
                submitted = connection.submit(method: job.group.method, path: path, headers: job.group.headers, body: job.group.body, deadline: deadline)
            }
            guard let stream = submitted else {
                ready.pushFront(job)
                return
            }
            if job.offWire {
                job.offWire = false
                (job.group.sink ?? sink)?.pushWentBackOnWire(id: job.id)
            }
            slot.jobs[stream] = job
            slot.inFlight += 1
            budget -= 1
        }
    }

    func nextRandom() -> Double { random.unitInterval() }

    /// A group whose `:path` prefix is longer than the buffer: grow it once (not per push).
    private func growPathBuffer(to capacity: Int) {
        pathBuffer.deallocate()
        pathCapacity = capacity
        pathBuffer = .allocate(capacity: capacity)
    }
}

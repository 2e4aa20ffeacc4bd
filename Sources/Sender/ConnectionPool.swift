#if canImport(Glibc)
import Glibc
#endif
import HTTP2
import IO
import Synchronization
import Vocabulary

/// A pool of HTTP/2 connections to one APNs endpoint, spread over event-loop threads that own them.
///
/// A producer (the fan-out planner, `sokuho bench`) calls `send` with batches of jobs; the pool
/// spreads them over its loops' bounded queues (waiting while they are full: backpressure), and
/// every push ends in exactly one `PushOutcome`, reported to the sink and counted.
public final class ConnectionPool: Sendable {
    private let loops: [EventLoop]
    private let senders: [LoopSender]
    private let threads: Lock<[OSThread]>
    private let state: PoolState
    private let submitted = Atomic<Int>(0)
    private let nextLoop = Atomic<Int>(0)
    /// Request calls (`submit`) waiting for their answers.
    let calls = OutstandingCalls()
    /// What the fan-outs on this pool may have handed out unanswered, together (`HandOutGate`).
    public let handOut: HandOutGate
    private let shutDown = Atomic<Bool>(false)
    /// An FCM pool's access tokens: it listens for new ones (and for a refusal) until shut down.
    private let accessTokens: FCMAccessTokenSource?
    /// Whether `shutdown` was called: nothing more is sent.
    var isShutDown: Bool { shutDown.load(ordering: .acquiring) }

    /// Throws when the loops cannot get their descriptors (the process is out of them): the caller
    /// refuses what needed the pool, the daemon goes on.
    public init(configuration: PoolConfiguration, sink: PushOutcomeSink? = nil) throws(TransportError) {
        state = PoolState(connections: configuration.connections, messagesPerMinute: configuration.messagesPerMinute)
        let handOut = HandOutGate(connections: configuration.connections, streamsPerConnection: configuration.streamsPerConnection)
        self.handOut = handOut
        let threadCount = max(1, min(configuration.threads, configuration.connections))
        var loops: [EventLoop] = []
        var senders: [LoopSender] = []
        for index in 0..<threadCount {
            let loop = try EventLoop(name: "sokuho-send-\(index)")
            // Connections are dealt round-robin: loop i owns connections i, i+threads, …
            let share = configuration.connections / threadCount + (index < configuration.connections % threadCount ? 1 : 0)
            let sender = LoopSender(loop: loop, connections: share, configuration: configuration, sink: sink, pool: state,
                                    grants: (handOut, index))
            loops.append(loop)
            senders.append(sender)
        }
        self.loops = loops
        self.senders = senders
        threads = Lock([])
        accessTokens = configuration.provider.accessTokens
        if let accessTokens {
            // Pushes wait for a token without a timer: the source wakes the loops when one comes,
            // and a refused account halts the pool (its loops then end what is queued). Listening
            // before the loops start: a first token fetched for their first turn is not missed.
            let state = self.state, wakeable = loops
            accessTokens.addListener(ObjectIdentifier(state)) { event in
                if case let .refused(message) = event { state.halt(.authOrConnectionFailure, message: message) }
                for loop in wakeable { loop.wake() }
            }
        }
        let started = zip(loops, senders).map { loop, sender in
            loop.execute { loop.add(sender, driver: true) }
            return loop.start()
        }
        threads.withLock { $0 = started }
    }

    /// Queues `jobs`, waiting while the loops' queues are full (backpressure: the loops announce
    /// when they drain). Safe from any thread but a loop's.
    public func send(_ jobs: [PushJob], urgent: Bool = false) {
        guard !jobs.isEmpty else { return }
        submitted.add(jobs.count, ordering: .relaxed)
        var start = 0
        while start < jobs.count {
            let index = nextLoop.add(1, ordering: .relaxed).oldValue % senders.count
            let sender = senders[index]
            // Hand each loop a slice at a time so work spreads evenly.
            let end = min(jobs.count, start + max(256, jobs.count / senders.count))
            let slice = Array(jobs[start..<end])
            var offset = 0
            while offset < slice.count {
                let queue = urgent ? sender.urgentQueue : sender.queue
                let added = queue.offer(slice, from: offset)
                offset += added
                if added > 0 {
                    sender.loop.wake()
                } else {
                    // Full: wait for this loop to drain (re-checked under the lock, so a drain between
                    // the failed offer and the wait is not missed; the timeout is a safety net).
                    let roomMade = state.wait(until: MonotonicInstant.now() + .milliseconds(100)) { queue.count < queue.capacity }
                    if !roomMade { sender.loop.wake() }  // a nudge: the loop re-checks its queue and deadlines
                }
            }
            start = end
        }
    }

    /// Event-loop turns taken by the pool's threads so far (an idle pool sleeps: this stays still).
    public var loopTurns: Int { loops.reduce(0) { $0 + $1.turns.load(ordering: .relaxed) } }

    /// Connections connecting or open right now (a warm pool's readiness).
    public var connectionsUp: Int { senders.reduce(0) { $0 + $1.liveConnections.load(ordering: .relaxed) } }

    /// Pushes queued so far.
    public var submittedCount: Int { submitted.load(ordering: .relaxed) }

    /// Pushes that reached their final outcome so far.
    public var finishedCount: Int { senders.reduce(0) { $0 + $1.finished.load(ordering: .acquiring) } }

    /// Waits until every queued push has its outcome, or `timeout` passes; returns whether all
    /// finished. `progress` is called about every 200 ms with the number finished.
    @discardableResult
    public func waitUntilFinished(timeout: Duration? = nil, progress: ((Int) -> Void)? = nil) -> Bool {
        let end = timeout.map { MonotonicInstant.now() + $0 } ?? .distantFuture
        while true {
            let now = MonotonicInstant.now()
            if finishedCount >= submittedCount { return true }
            if now >= end { return false }
            // The loops announce when they run out of work; the 200 ms bound paces the progress line.
            let done = state.wait(until: min(end, now + .milliseconds(200))) { self.finishedCount >= self.submittedCount }
            if done { return true }
            progress?(finishedCount)
        }
    }

    /// Counters summed over all loops, with merged latencies (call after `waitUntilFinished`).
    public func statistics() -> (counters: SenderCounters, latencies: LatencyHistogram) {
        // Ask every loop to publish on its own thread, then read.
        let pending = Atomic<Int>(senders.count)
        let state = self.state
        for sender in senders {
            sender.loop.execute {
                sender.publishNow()
                pending.subtract(1, ordering: .sequentiallyConsistent)
                state.loopWentIdle()
            }
        }
        _ = state.wait(until: MonotonicInstant.now() + .seconds(10)) { pending.load(ordering: .sequentiallyConsistent) == 0 }
        var counters = SenderCounters()
        var latencies = LatencyHistogram()
        for sender in senders {
            let (c, l) = sender.read()
            counters = counters + c
            if let l { latencies.merge(l) }
        }
        return (counters, latencies)
    }

    /// Why the pool stopped sending, if it did (bad credentials, unreachable server).
    public var haltMessage: String? { state.haltMessage }

    /// The last error a connection of the pool closed with, if any.
    public var lastConnectionError: TransportError? { state.lastConnectionError }

    /// Closes every connection (each sends its GOAWAY once its streams are done), waits up to a
    /// second for them to close, and stops the loop threads. Once: a second call returns at once.
    public func shutdown() {
        shutDown.store(true, ordering: .releasing)
        accessTokens?.removeListener(ObjectIdentifier(state))
        let threads = self.threads.withLock { threads -> [OSThread] in defer { threads = [] }; return threads }
        guard !threads.isEmpty else { return }
        for sender in senders { sender.loop.execute { sender.closeAll() } }
        _ = state.wait(until: MonotonicInstant.now() + .seconds(1)) {
            self.senders.allSatisfy {
                $0.liveConnections.load(ordering: .sequentiallyConsistent) == 0 && $0.drainingConnections.load(ordering: .sequentiallyConsistent) == 0
            }
        }
        for loop in loops { loop.stop() }
        for thread in threads { thread.join() }
        calls.abandonAll()
    }
}

import HTTP2
import IO
import Synchronization
import Vocabulary

/// What all loop threads of one pool share: whether it stopped, and why.
final class PoolState: Sendable {
    let halted = Atomic<Bool>(false)
    private let reason = Lock<(PushOutcome, String)?>(nil)
    /// Connections of the pool, and how many of them failed `failFastAfter` times in a row.
    private let connectionCount: Int
    private let unreachable = Atomic<Int>(0)
    private let everOpened = Atomic<Bool>(false)

    /// The pool's messages-a-minute bucket (`PoolConfiguration.messagesPerMinute`); nil: no limit.
    let rateLimiter: MessageRateLimiter?

    init(connections: Int, messagesPerMinute: Int? = nil) {
        connectionCount = max(1, connections)
        rateLimiter = messagesPerMinute.map(MessageRateLimiter.init(messagesPerMinute:))
    }

    // MARK: The control plane: threads outside the loops wait here, the loops announce changes.

    /// Producers waiting for queue space, callers waiting for the end, a shutdown waiting for the
    /// connections to close: they wait on `signal`; a loop broadcasts only when someone waits.
    let signal = ConditionLock()
    private let waiters = Atomic<Int>(0)

    /// Waits (on the calling thread, never a loop's) until `done()` or `deadline`; returns `done()`.
    func wait(until deadline: MonotonicInstant, for done: () -> Bool) -> Bool {
        signal.withLock {
            waiters.add(1, ordering: .sequentiallyConsistent)
            defer { waiters.subtract(1, ordering: .sequentiallyConsistent) }
            while !done() {
                if !signal.wait(until: deadline) { return done() }
            }
            return true
        }
    }

    /// Something a waiter may be waiting for happened (checked by the waiter under the lock).
    private func announce() {
        guard waiters.load(ordering: .sequentiallyConsistent) > 0 else { return }
        signal.withLock { signal.broadcast() }
    }

    /// A loop took jobs out of its queue: room for a waiting producer.
    func queueDrained() { announce() }
    /// A loop has nothing queued or in flight any more.
    func loopWentIdle() { announce() }
    /// A connection closed (a shutdown waits for all of them).
    func connectionClosed() { announce() }

    func halt(_ outcome: PushOutcome, message: String) {
        reason.withLock { if $0 == nil { $0 = (outcome, message) } }
        halted.store(true, ordering: .releasing)
        announce()
    }

    var haltOutcome: PushOutcome { reason.withLock { $0?.0 ?? .authOrConnectionFailure } }
    var haltMessage: String? { reason.withLock { $0?.1 } }

    func connectionOpened() { everOpened.store(true, ordering: .relaxed) }

    /// Monotonic ns before which no loop sends anything (FCM's project quota is spent: 429
    /// `QUOTA_EXCEEDED` with `Retry-After`); 0: not paused. A quota is the project's, not a
    /// connection's, so one answer pauses them all.
    private let pausedUntil = Atomic<UInt64>(0)

    /// Pauses sending until `end` (a later pause wins).
    func pause(until end: MonotonicInstant) {
        var current = pausedUntil.load(ordering: .relaxed)
        while end.nanoseconds > current {
            let (exchanged, original) = pausedUntil.compareExchange(expected: current, desired: end.nanoseconds, ordering: .relaxed)
            if exchanged { return }
            current = original
        }
    }

    /// When the pause ends, while the pool is paused; nil otherwise. Reads the clock only during
    /// and right after a pause (APNs pools never pause: one atomic load per turn).
    var pauseEnd: MonotonicInstant? {
        let end = pausedUntil.load(ordering: .relaxed)
        guard end != 0 else { return nil }
        if MonotonicInstant.now().nanoseconds < end { return MonotonicInstant(nanoseconds: end) }
        _ = pausedUntil.compareExchange(expected: end, desired: 0, ordering: .relaxed)
        return nil
    }

    /// The last error a connection closed with (once per failed connection, not per push): what a
    /// caller reports when its requests got no answer at all.
    private let lastError = Lock<TransportError?>(nil)
    func connectionFailed(_ error: TransportError) { lastError.withLock { $0 = error } }
    var lastConnectionError: TransportError? { lastError.withLock { $0 } }

    /// The oldest provider-token generation APNs has accepted (Int.max: none yet).
    private let firstAcceptedGeneration = Atomic<Int>(.max)

    func tokenAccepted(generation: Int) {
        var current = firstAcceptedGeneration.load(ordering: .relaxed)
        while generation < current {
            let (exchanged, original) = firstAcceptedGeneration.compareExchange(expected: current, desired: generation, ordering: .relaxed)
            if exchanged { return }
            current = original
        }
    }

    /// Whether APNs accepted a token of a generation before `generation`.
    func acceptedTokenBefore(generation: Int) -> Bool { firstAcceptedGeneration.load(ordering: .relaxed) < generation }

    /// Generation → how many connections were told `ExpiredProviderToken` before APNs accepted
    /// anything on them. Rare (a handful per hour at worst), so a lock is fine.
    private let expiredOnFreshConnections = Lock<[Int: Int]>([:])

    /// Notes an `ExpiredProviderToken` for `generation` on a connection that had no push accepted
    /// yet; whether that has now happened twice. A token APNs really considers expired (this
    /// machine's clock behind APNs') is refused on every new connection, while a sporadic answer
    /// comes among accepted pushes and must not stop every phone's warning.
    func tokenExpiredOnFreshConnection(generation: Int) -> Bool {
        expiredOnFreshConnections.withLock { counts in
            counts[generation, default: 0] += 1
            return counts[generation]! >= 2
        }
    }

    /// One connection has failed to connect `failFastAfter` times in a row (each connection reports
    /// it once). When all have and none ever opened, the server is unreachable: halt.
    func connectionGaveUp(_ error: TransportError) {
        let count = unreachable.add(1, ordering: .relaxed).newValue
        if !everOpened.load(ordering: .relaxed) && count >= connectionCount {
            halt(.authOrConnectionFailure, message: "cannot connect: \(error)")
        }
    }
}

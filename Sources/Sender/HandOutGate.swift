import IO
import Synchronization
import Vocabulary

/// How many start pushes every run on one pool may have handed out and not yet seen answered,
/// together: what the pool's connections can have on the wire (`connections × streams`) plus one
/// hand-out batch `B` waiting in the pool's queue, so the wire never idles between a batch's
/// answers and the next batch.
///
/// This is the bound on what a crash can leave in doubt (issue 22). A run records, before each
/// batch goes out, what was answered so far; after a kill, the pushes handed out and not recorded
/// as answered are `unknown` (or resent with `onUnknown: resend`). Gated here, they are at most
/// `limit` per pool — not per run: a daemon's two shard workers and its queued events share the
/// app's pool, and without one gate each would bring its own window.
///
/// Producers `acquire` before a batch and give the room back once a written checkpoint records
/// the answers (so the gate bounds what is handed out and not recorded as answered, whichever run
/// it belongs to). A release is one atomic subtraction; a producer that waits names the level it
/// waits for, and only the release that reaches it takes the lock to wake it.
public final class HandOutGate: Sendable {
    /// `connections × streams + batch` as configured: the most `limit` can be (what a scan
    /// window is sized for).
    public let maximumLimit: Int
    /// The wire as the servers grant it plus `batch`: each connection's streams are the fewer of
    /// the configured ones and the server's latest SETTINGS_MAX_CONCURRENT_STREAMS (FCM commonly
    /// grants 100 where 250 are configured; APNs lowers and raises it with load). Sized for the
    /// configured streams, the gate let pushes wait in the pool's queue that no stream could take —
    /// never written, yet unknown after a kill.
    public var limit: Int { currentLimit.load(ordering: .relaxed) }
    private let currentLimit: Atomic<Int>
    /// Per loop (`LoopSender`), how many streams its connections' servers grant fewer than configured.
    private let shortfalls = Lock<[Int: Int]>([:])
    /// `B`: the most a producer hands out at once (and so what waits in the pool's queue).
    public let batch: Int
    private let outstanding = Atomic<Int>(0)
    /// The level the last waiting producer needs `outstanding` to fall to (-1: none yet).
    private let wakeAt = Atomic<Int>(-1)
    /// Producers waiting in `acquire`.
    private let waiters = Atomic<Int>(0)
    private let lock = ConditionLock()

    /// `B` for a pool of `wire` streams: a quarter of them (a batch is refilled four times per
    /// round of answers, each after a checkpoint), at least 16 (a checkpoint per 16 pushes on the
    /// smallest pools), at most 2,048.
    public static func batch(forWire wire: Int) -> Int { min(2_048, max(16, wire / 4)) }

    public init(connections: Int, streamsPerConnection: Int) {
        let wire = max(1, connections) * max(1, streamsPerConnection)
        batch = Self.batch(forWire: wire)
        maximumLimit = wire + batch
        currentLimit = Atomic(wire + batch)
    }

    /// A loop's connections are granted `shortfall` streams fewer than configured (0: all of
    /// them): the limit follows, and a raised limit wakes the producers waiting for room.
    public func granted(loop: Int, shortfall: Int) {
        let (old, new) = shortfalls.withLock { table -> (Int, Int) in
            let old = maximumLimit - table.values.reduce(0, +)
            table[loop] = shortfall
            return (old, max(batch, maximumLimit - table.values.reduce(0, +)))
        }
        currentLimit.store(new, ordering: .sequentiallyConsistent)
        if new > old { nudgeWaiters() }
    }

    /// Pushes handed out and not yet answered, over every run on the pool.
    public var count: Int { outstanding.load(ordering: .relaxed) }

    /// Takes `count` (≤ `batch`) if they fit under `limit` — or if nothing is outstanding —, else
    /// waits until room is given back, a `nudgeWaiters`, or `deadline`. False: no room yet (nothing
    /// was taken; the producer records its answers — which gives their room back —, checkpoints
    /// or stops, and asks again).
    public func acquire(_ count: Int, until deadline: MonotonicInstant) -> Bool {
        precondition(count >= 0 && count <= batch, "a hand-out larger than the gate's batch")
        if tryAcquire(count) { return true }
        return lock.withLock {
            waiters.add(1, ordering: .sequentiallyConsistent)
            defer { waiters.subtract(1, ordering: .sequentiallyConsistent) }
            wakeAt.store(limit - count, ordering: .sequentiallyConsistent)
            // Re-checked after announcing the level: a release that fell to it just before the
            // store saw no waiter, and this check sees its result.
            if tryAcquire(count) { return true }
            lock.wait(until: deadline)
            return tryAcquire(count)
        }
    }

    /// Whether a producer waits for room.
    public var hasWaiters: Bool { waiters.load(ordering: .sequentiallyConsistent) > 0 }

    /// Wakes the producers waiting for room (answers of theirs or another run's are waiting to be
    /// recorded: only a written checkpoint gives their room back).
    public func nudgeWaiters() {
        guard hasWaiters else { return }
        lock.withLock { lock.broadcast() }
    }

    /// Gives back `count` (answers, or a batch that was not handed out after all).
    public func release(_ count: Int) {
        guard count > 0 else { return }
        let now = outstanding.subtract(count, ordering: .sequentiallyConsistent).newValue
        let level = wakeAt.load(ordering: .sequentiallyConsistent)
        if level >= 0, now <= level, now + count > level, hasWaiters {
            lock.withLock { lock.broadcast() }
        }
    }

    private func tryAcquire(_ count: Int) -> Bool {
        var current = outstanding.load(ordering: .sequentiallyConsistent)
        while current == 0 || current + count <= limit {
            let (exchanged, original) = outstanding.compareExchange(expected: current, desired: current + count, ordering: .sequentiallyConsistent)
            if exchanged { return true }
            current = original
        }
        return false
    }
}

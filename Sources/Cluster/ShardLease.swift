import DaemonConfiguration
import Redis
import IO
import Vocabulary

/// A shard's lease while this node sends the shard. A thread of its own (with its own Redis link)
/// extends it every third of its duration and re-claims the shard's stream entry, which resets the
/// entry's idle time so no other node's XAUTOCLAIM takes it while this one works.
///
/// `lostReason` turns non-nil once the lease is gone (the extension found another holder), or once
/// it went unextended for two thirds of its duration (Redis unreachable: a partition). That is
/// before it can expire, so a cut-off holder stops handing out pushes before any other node can
/// take the lease and start — the split brain a lease without this check would allow.
package final class ShardLease: Sendable {
    package let lease: Lease
    private let duration: Duration
    private let state = LeaseState()
    private let keeper = Lock<PeriodicThread?>(nil)

    package init(_ lease: Lease, entry: StreamID, duration: Duration, cluster: ClusterNode) {
        self.lease = lease
        self.duration = duration
        let link = Lock(cluster.link())
        let node = cluster.node
        let state = state
        // The thread holds what it uses, never this lease: dropped without `stop` (a throw past
        // the caller's `stop`), the keeper's `deinit` ends the thread.
        let thread = PeriodicThread(name: "sokuho-lease", interval: duration / 3) { _ in
            let attempt = MonotonicInstant.now()
            do {
                let held = try link.withLock { link throws(RedisError) -> Bool in
                    try link.run { connection throws(RedisError) -> Bool in
                        guard try connection.extendLease(lease, for: duration) else { return false }
                        _ = try connection.keepClaimed(entry, on: ClusterKeys.events, group: ClusterKeys.eventGroup, for: node)
                        return true
                    }
                }
                state.lock.withLock { state in
                    if held { state.extendedAt = attempt } else if state.lost == nil { state.lost = "the shard's lease was taken over by another node" }
                }
            } catch {
                // Not extended this round; `lostReason` stops the shard if it stays so too long.
            }
        }
        keeper.withLock { $0 = thread }
    }

    /// Why this node must stop sending the shard, or nil while the lease is safely held.
    package var lostReason: String? {
        state.lock.withLock { state in
            if let lost = state.lost { return lost }
            let since = MonotonicInstant.now() - state.extendedAt
            guard since >= duration * 2 / 3 else { return nil }
            state.lost = "the shard's lease could not be extended for \(since.milliseconds) ms (Redis unreachable); another node takes the shard over"
            return state.lost
        }
    }

    package func stop() { keeper.stopThread() }
}

/// When the lease was last extended and why it was lost: shared by the lease and its keeper's
/// thread (a `Lock` alone cannot be captured by the thread's closure).
private final class LeaseState: Sendable {
    let lock = Lock<(extendedAt: MonotonicInstant, lost: String?)>((MonotonicInstant.now(), nil))
}

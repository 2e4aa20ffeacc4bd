import Synchronization
import Vocabulary

/// What every loop thread of one simulator shares: counters, the channel table, the request count
/// the GOAWAY and drop faults go by, and the log. Everything else lives per loop.
final class SimulatorShared: Sendable {
    let counters = Lock(SimulatorCounters())
    /// bundle → channel ID → storage policy.
    let channels = Lock<[String: [String: Int]]>([:])
    /// Device-push and broadcast requests over all connections and threads.
    let pushRequests = Atomic<Int>(0)
    /// Provider-token changes per signing key, with `ProviderTokenScope.key`.
    let keyTokens = Lock(KeyTokenUpdates())
    let log: PushLog?
    let fcm: FCMSimulatorState

    init(log: PushLog?, fcm: FCMSimulatorState) {
        self.log = log
        self.fcm = fcm
    }
}

import HTTP2
import Synchronization

/// What all loop threads of one pool share: whether it stopped, and why.
final class PoolState: Sendable {
    let halted = Atomic<Bool>(false)
    private let reason = Mutex<(PushOutcome, String)?>(nil)
    private let failedAttempts = Atomic<Int>(0)
    private let everOpened = Atomic<Bool>(false)

    func halt(_ outcome: PushOutcome, message: String) {
        reason.withLock { if $0 == nil { $0 = (outcome, message) } }
        halted.store(true, ordering: .releasing)
    }

    var haltOutcome: PushOutcome { reason.withLock { $0?.0 ?? .authOrConnectionFailure } }
    var haltMessage: String? { reason.withLock { $0?.1 } }

    func connectionOpened() { everOpened.store(true, ordering: .relaxed) }

    /// Counts a failed attempt; with no connection ever opened, `failFastAfter` of them halt the pool.
    func connectionFailed(_ error: TransportError, failFastAfter: Int) {
        let attempts = failedAttempts.add(1, ordering: .relaxed).newValue
        if !everOpened.load(ordering: .relaxed) && attempts >= failFastAfter {
            halt(.authOrConnectionFailure, message: "cannot connect: \(error)")
        }
    }
}

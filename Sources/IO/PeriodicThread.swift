import Vocabulary

/// A thread that runs `body` at once and then every `interval` until stopped: the daemon's
/// credential checks and a standby's look at the shipped backup. `stop` wakes it from its wait and
/// joins it; a `body` under way finishes first (its own timeouts bound it).
package final class PeriodicThread: @unchecked Sendable {
    // @unchecked: `stopping` is guarded by `lock`; `thread` is written once before anyone joins.
    private let lock = ConditionLock()
    private var stopping = false
    private var thread: OSThread?

    /// `body` gets a function telling whether `stop` was called (to end a long round early).
    package init(name: String, interval: Duration, _ body: @escaping @Sendable (_ stopping: () -> Bool) -> Void) {
        thread = OSThread.start(name: name) { [unowned self] in
            repeat { body { self.lock.withLock { self.stopping } } } while waitOrStop(interval)
        }
    }

    /// Waits `interval`; false when told to stop meanwhile.
    private func waitOrStop(_ interval: Duration) -> Bool {
        let deadline = MonotonicInstant.now() + interval
        return lock.withLock {
            while !stopping, MonotonicInstant.now() < deadline { lock.wait(until: deadline) }
            return !stopping
        }
    }

    package func stop() {
        lock.withLock { stopping = true; lock.broadcast() }
        thread?.join()
        thread = nil
    }
}

extension Lock where Value == PeriodicThread? {
    /// Stops the thread held here, if any, and forgets it (outside the lock: `stop` joins).
    package func stopThread() {
        withLock { thread -> PeriodicThread? in defer { thread = nil }; return thread }?.stop()
    }
}

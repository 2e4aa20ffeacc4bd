import Vocabulary

/// A thread that runs `body` at once and then every `interval` until stopped: the daemon's
/// credential checks, a standby's look at the shipped backup, a shard's lease. `stop` wakes it
/// from its wait and joins it; a `body` under way finishes first (its own timeouts bound it).
///
/// The thread shares only a `Signal` with its owner, never the owner itself: dropping the last
/// reference without `stop` (an error thrown past the owner's `stop` call) stops the thread in
/// `deinit`, where the thread holding the owner `unowned` read it after it was freed and aborted
/// the daemon (issue 37: a shard worker's Redis call failed between starting a lease's keeper and
/// stopping it).
package final class PeriodicThread: @unchecked Sendable {
    // @unchecked: `thread` is written once in `init` and taken under `signal.lock`.
    private let signal = Signal()
    private var thread: OSThread?

    /// What the thread and its owner share: whether to stop, and the lock its wait sleeps on.
    private final class Signal: @unchecked Sendable {
        // @unchecked: `stopping` is guarded by `lock`.
        let lock = ConditionLock()
        var stopping = false

        var isStopping: Bool { lock.withLock { stopping } }

        /// Waits `interval`; false when told to stop meanwhile.
        func waitOrStop(_ interval: Duration) -> Bool {
            let deadline = MonotonicInstant.now() + interval
            return lock.withLock {
                while !stopping, MonotonicInstant.now() < deadline { lock.wait(until: deadline) }
                return !stopping
            }
        }

        /// Tells the thread to stop; the thread to join, once (nil when another call took it).
        func stop(taking thread: inout OSThread?) -> OSThread? {
            lock.withLock {
                stopping = true
                lock.broadcast()
                defer { thread = nil }
                return thread
            }
        }
    }

    /// `body` gets a function telling whether `stop` was called (to end a long round early).
    package init(name: String, interval: Duration, _ body: @escaping @Sendable (_ stopping: () -> Bool) -> Void) {
        let signal = signal
        let started = OSThread.start(name: name) {
            repeat { body { signal.isStopping } } while signal.waitOrStop(interval)
        }
        signal.lock.withLock { thread = started }
    }

    deinit { stop() }

    /// Stops the thread and waits for it to end. Idempotent. From the thread itself (its `body`
    /// dropped the last reference to this) it cannot join itself: the thread ends after the
    /// round and is detached, so its resources go back then.
    package func stop() {
        guard let thread = signal.stop(taking: &thread) else { return }
        if thread.isCurrent { thread.detach() } else { thread.join() }
    }
}

extension Lock where Value == PeriodicThread? {
    /// Stops the thread held here, if any, and forgets it (outside the lock: `stop` joins).
    package func stopThread() {
        withLock { thread -> PeriodicThread? in defer { thread = nil }; return thread }?.stop()
    }
}

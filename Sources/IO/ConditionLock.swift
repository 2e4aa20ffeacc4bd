#if canImport(Glibc)
import Glibc
#endif

/// A mutex with a condition variable on CLOCK_MONOTONIC: how threads outside the loops (a producer
/// feeding the pool, a caller waiting for the end, a shutdown) wait for the loops to say something
/// happened, instead of polling with sleeps. All pthread calls are checked.
public final class ConditionLock: @unchecked Sendable {
    // @unchecked: the pthread objects are the synchronisation.
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private let condition: UnsafeMutablePointer<pthread_cond_t>

    public init() {
        mutex = .allocate(capacity: 1)
        condition = .allocate(capacity: 1)
        Syscall.pthread("pthread_mutex_init", pthread_mutex_init(mutex, nil))
        var attributes = pthread_condattr_t()
        Syscall.pthread("pthread_condattr_init", pthread_condattr_init(&attributes))
        Syscall.pthread("pthread_condattr_setclock", pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC))
        Syscall.pthread("pthread_cond_init", pthread_cond_init(condition, &attributes))
        Syscall.pthread("pthread_condattr_destroy", pthread_condattr_destroy(&attributes))
    }

    deinit {
        Syscall.pthread("pthread_cond_destroy", pthread_cond_destroy(condition))
        Syscall.pthread("pthread_mutex_destroy", pthread_mutex_destroy(mutex))
        condition.deallocate()
        mutex.deallocate()
    }

    public func withLock<T>(_ body: () throws -> T) rethrows -> T {
        Syscall.pthread("pthread_mutex_lock", pthread_mutex_lock(mutex))
        defer { Syscall.pthread("pthread_mutex_unlock", pthread_mutex_unlock(mutex)) }
        return try body()
    }

    /// Waits (inside `withLock`) until signalled or `deadline`; false when the deadline passed.
    /// Callers re-check their condition either way: wake-ups may be spurious.
    @discardableResult
    public func wait(until deadline: MonotonicInstant) -> Bool {
        var time = timespec(tv_sec: Int(deadline.nanoseconds / 1_000_000_000), tv_nsec: Int(deadline.nanoseconds % 1_000_000_000))
        let rc = pthread_cond_timedwait(condition, mutex, &time)
        if rc == ETIMEDOUT { return false }
        Syscall.pthread("pthread_cond_timedwait", rc)
        return true
    }

    /// Waits (inside `withLock`) until signalled, without a deadline: the store's writer thread
    /// waiting for work. Callers re-check their condition: wake-ups may be spurious.
    public func wait() { Syscall.pthread("pthread_cond_wait", pthread_cond_wait(condition, mutex)) }

    /// Wakes every waiter; take the lock around the change being announced, then call this.
    public func broadcast() { Syscall.pthread("pthread_cond_broadcast", pthread_cond_broadcast(condition)) }
}

import Glibc
import IO

/// Growing LMDB's map remaps the file, which would pull the pages out from under any open
/// transaction of this process. Every transaction runs under the shared side of this lock; the
/// writer grows the map under the exclusive side. Writer-preferring, so a stream of readers
/// cannot starve a growth.
final class MapGuard: @unchecked Sendable {
    // @unchecked: the pthread rwlock is the synchronisation; it lives at a stable heap address.
    private let lock: UnsafeMutablePointer<pthread_rwlock_t>

    init() {
        lock = .allocate(capacity: 1)
        var attributes = pthread_rwlockattr_t()
        Syscall.pthread("pthread_rwlockattr_init", pthread_rwlockattr_init(&attributes))
        Syscall.pthread("pthread_rwlockattr_setkind_np",
                       pthread_rwlockattr_setkind_np(&attributes, Int32(PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP)))
        Syscall.pthread("pthread_rwlock_init", pthread_rwlock_init(lock, &attributes))
        Syscall.pthread("pthread_rwlockattr_destroy", pthread_rwlockattr_destroy(&attributes))
    }

    deinit {
        Syscall.pthread("pthread_rwlock_destroy", pthread_rwlock_destroy(lock))
        lock.deallocate()
    }

    func shared<T>(_ body: () throws(StoreError) -> T) throws(StoreError) -> T {
        // EAGAIN (too many readers) or EDEADLK (this thread already holds it exclusively) would be
        // a bug in this module: the guard is never taken recursively.
        Syscall.pthread("pthread_rwlock_rdlock", pthread_rwlock_rdlock(lock))
        defer { Syscall.pthread("pthread_rwlock_unlock", pthread_rwlock_unlock(lock)) }
        return try body()
    }

    func exclusive<T>(_ body: () throws(StoreError) -> T) throws(StoreError) -> T {
        Syscall.pthread("pthread_rwlock_wrlock", pthread_rwlock_wrlock(lock))
        defer { Syscall.pthread("pthread_rwlock_unlock", pthread_rwlock_unlock(lock)) }
        return try body()
    }
}

import Glibc

/// A pthread mutex and condition variable at stable heap addresses (no Foundation): the one
/// blocking primitive of the store's queue and completions.
final class ConditionLock: @unchecked Sendable {
    // @unchecked: this is the synchronisation primitive itself.
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private let condition: UnsafeMutablePointer<pthread_cond_t>

    init() {
        mutex = .allocate(capacity: 1)
        condition = .allocate(capacity: 1)
        Posix.expect(pthread: pthread_mutex_init(mutex, nil), "pthread_mutex_init")
        Posix.expect(pthread: pthread_cond_init(condition, nil), "pthread_cond_init")
    }

    deinit {
        Posix.expect(pthread: pthread_cond_destroy(condition), "pthread_cond_destroy")
        Posix.expect(pthread: pthread_mutex_destroy(mutex), "pthread_mutex_destroy")
        mutex.deallocate()
        condition.deallocate()
    }

    /// Runs `body` with the mutex held.
    func locked<T>(_ body: () -> T) -> T {
        Posix.expect(pthread: pthread_mutex_lock(mutex), "pthread_mutex_lock")
        defer { Posix.expect(pthread: pthread_mutex_unlock(mutex), "pthread_mutex_unlock") }
        return body()
    }

    /// With the mutex held: sleeps until signalled (the mutex is released while waiting).
    func wait() { Posix.expect(pthread: pthread_cond_wait(condition, mutex), "pthread_cond_wait") }
    /// With the mutex held: wakes the waiters.
    func broadcast() { Posix.expect(pthread: pthread_cond_broadcast(condition), "pthread_cond_broadcast") }
}

/// A FIFO of pending work with a blocking `take`, shared by callers and the writer thread.
final class WorkQueue<Item>: @unchecked Sendable {
    // @unchecked: every access to `items` and `closed` happens inside `lock.locked`.
    private let lock = ConditionLock()
    private var items: [Item] = []
    private var closed = false

    /// Adds an item; false when the queue is closed.
    func put(_ item: Item) -> Bool {
        lock.locked {
            guard !closed else { return false }
            items.append(item)
            lock.broadcast()
            return true
        }
    }

    /// Waits for at least one item and takes items while `weight` of the taken ones stays within
    /// `limit` (always at least one). Returns [] once the queue is closed and drained.
    func take(limit: Int, weight: (Item) -> Int) -> [Item] {
        lock.locked {
            while items.isEmpty && !closed { lock.wait() }
            var taken = 0
            var total = 0
            while taken < items.count {
                let next = weight(items[taken])
                if taken > 0 && total + next > limit { break }
                total += next
                taken += 1
            }
            defer { items.removeFirst(taken) }
            return Array(items[..<taken])
        }
    }

    /// Refuses new items; `take` still drains what is queued.
    func close() {
        lock.locked {
            closed = true
            lock.broadcast()
        }
    }
}

/// Blocks a caller until a completion arrives from another thread.
final class Completion<Value: Sendable>: @unchecked Sendable {
    // @unchecked: `value` is written and read inside `lock.locked`.
    private let lock = ConditionLock()
    private var value: Value?

    func fulfil(_ newValue: Value) {
        lock.locked {
            value = newValue
            lock.broadcast()
        }
    }

    func wait() -> Value {
        lock.locked {
            while value == nil { lock.wait() }
            return value!
        }
    }
}

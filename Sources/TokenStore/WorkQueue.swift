import Glibc

/// A FIFO of pending work with a blocking `take`, shared by callers and the writer thread.
/// A pthread mutex + condition variable at stable heap addresses; no Foundation.
final class WorkQueue<Item>: @unchecked Sendable {
    // @unchecked: every access to `items` and `closed` happens with `mutex` held.
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private let condition: UnsafeMutablePointer<pthread_cond_t>
    private var items: [Item] = []
    private var closed = false

    init() {
        mutex = .allocate(capacity: 1)
        condition = .allocate(capacity: 1)
        pthread_mutex_init(mutex, nil)
        pthread_cond_init(condition, nil)
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
        condition.deallocate()
    }

    /// Adds an item; false when the queue is closed.
    func put(_ item: Item) -> Bool {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        guard !closed else { return false }
        items.append(item)
        pthread_cond_signal(condition)
        return true
    }

    /// Waits for at least one item and takes items while `weight` of the taken ones stays within
    /// `limit` (always at least one). Returns [] once the queue is closed and drained.
    func take(limit: Int, weight: (Item) -> Int) -> [Item] {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        while items.isEmpty && !closed { pthread_cond_wait(condition, mutex) }
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

    /// Refuses new items; `take` still drains what is queued.
    func close() {
        pthread_mutex_lock(mutex)
        closed = true
        pthread_cond_broadcast(condition)
        pthread_mutex_unlock(mutex)
    }
}

/// Blocks a caller until a completion arrives from another thread.
final class Completion<Value: Sendable>: @unchecked Sendable {
    // @unchecked: `value` is written once under `mutex` and read after the wait under it.
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private let condition: UnsafeMutablePointer<pthread_cond_t>
    private var value: Value?

    init() {
        mutex = .allocate(capacity: 1)
        condition = .allocate(capacity: 1)
        pthread_mutex_init(mutex, nil)
        pthread_cond_init(condition, nil)
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
        condition.deallocate()
    }

    func fulfil(_ newValue: Value) {
        pthread_mutex_lock(mutex)
        value = newValue
        pthread_cond_broadcast(condition)
        pthread_mutex_unlock(mutex)
    }

    func wait() -> Value {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        while value == nil { pthread_cond_wait(condition, mutex) }
        return value!
    }
}

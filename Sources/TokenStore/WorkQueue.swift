import IO

/// A FIFO of pending work with a blocking `take`, shared by callers and the writer thread.
final class WorkQueue<Item>: @unchecked Sendable {
    // @unchecked: every access to `items` and `closed` happens inside `lock.withLock`.
    private let lock = ConditionLock()
    private var items: [Item] = []
    private var closed = false

    /// Adds an item; false when the queue is closed.
    func put(_ item: Item) -> Bool {
        lock.withLock {
            guard !closed else { return false }
            items.append(item)
            lock.broadcast()
            return true
        }
    }

    /// Waits for at least one item and takes items while `weight` of the taken ones stays within
    /// `limit` (always at least one). Returns [] once the queue is closed and drained.
    func take(limit: Int, weight: (Item) -> Int) -> [Item] {
        lock.withLock {
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
        lock.withLock {
            closed = true
            lock.broadcast()
        }
    }
}

/// Blocks a caller until a completion arrives from another thread.
final class Completion<Value: Sendable>: @unchecked Sendable {
    // @unchecked: `value` is written and read inside `lock.withLock`.
    private let lock = ConditionLock()
    private var value: Value?

    func fulfil(_ newValue: Value) {
        lock.withLock {
            value = newValue
            lock.broadcast()
        }
    }

    func wait() -> Value {
        lock.withLock {
            while value == nil { lock.wait() }
            return value!
        }
    }
}

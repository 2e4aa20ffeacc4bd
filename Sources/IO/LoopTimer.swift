/// A wake-up a source owns and re-arms as often as it likes (a connection's next deadline, its
/// next liveness check, a back-off): arming moves it in the loop's heap, nothing is allocated.
/// The action runs on the loop thread when the deadline passes, then the timer is disarmed.
public final class LoopTimer {
    let action: (MonotonicInstant) -> Void
    /// When it fires, while armed.
    public internal(set) var deadline: MonotonicInstant?
    /// Position in the heap while armed (-1: not armed).
    var heapIndex = -1

    public init(_ action: @escaping (MonotonicInstant) -> Void) { self.action = action }

    public var isArmed: Bool { heapIndex >= 0 }
}

/// The loop's timers ordered by deadline: a binary min-heap whose entries know their position,
/// so re-arming and disarming are O(log n).
struct TimerHeap {
    private var heap: [LoopTimer] = []

    var isEmpty: Bool { heap.isEmpty }
    var earliest: MonotonicInstant? { heap.first?.deadline }

    mutating func arm(_ timer: LoopTimer, at deadline: MonotonicInstant) {
        timer.deadline = deadline
        if timer.heapIndex < 0 {
            timer.heapIndex = heap.count
            heap.append(timer)
        }
        siftUp(siftDown(timer.heapIndex))
    }

    mutating func disarm(_ timer: LoopTimer) {
        let index = timer.heapIndex
        guard index >= 0 else { return }
        let last = heap.removeLast()
        if index < heap.count {
            heap[index] = last
            last.heapIndex = index
            siftUp(siftDown(index))
        }
        timer.heapIndex = -1
        timer.deadline = nil
    }

    /// Disarms every timer (a stopped loop drops them, and with them what their actions hold).
    mutating func removeAll() {
        for timer in heap { (timer.heapIndex, timer.deadline) = (-1, nil) }
        heap.removeAll()
    }

    /// Removes and returns the earliest timer if it is due at `now`.
    mutating func popDue(now: MonotonicInstant) -> LoopTimer? {
        guard let first = heap.first, let deadline = first.deadline, deadline <= now else { return nil }
        disarm(first)
        return first
    }

    private func deadline(_ index: Int) -> MonotonicInstant { heap[index].deadline ?? .distantFuture }

    private mutating func swapEntries(_ a: Int, _ b: Int) {
        heap.swapAt(a, b)
        heap[a].heapIndex = a
        heap[b].heapIndex = b
    }

    @discardableResult
    private mutating func siftUp(_ start: Int) -> Int {
        var child = start
        while child > 0 {
            let parent = (child - 1) / 2
            guard deadline(child) < deadline(parent) else { break }
            swapEntries(child, parent)
            child = parent
        }
        return child
    }

    private mutating func siftDown(_ start: Int) -> Int {
        var parent = start
        while true {
            let left = 2 * parent + 1, right = left + 1
            var smallest = parent
            if left < heap.count, deadline(left) < deadline(smallest) { smallest = left }
            if right < heap.count, deadline(right) < deadline(smallest) { smallest = right }
            if smallest == parent { return parent }
            swapEntries(parent, smallest)
            parent = smallest
        }
    }
}

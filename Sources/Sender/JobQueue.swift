#if canImport(Glibc)
import Glibc
#endif
import Vocabulary

/// A bounded multi-producer, single-consumer ring of jobs between the fan-out planner and one
/// loop thread. Producers add in batches (one lock per batch, not per push) and wait while it is
/// full: that is the backpressure that keeps memory flat whatever the event's size.
final class JobQueue: Sendable {
    private struct Ring: ~Copyable {
        var slots: [PushJob?]
        var head = 0
        var count = 0
        init(capacity: Int) { slots = Array(repeating: nil, count: capacity) }
    }

    private let ring: Lock<Ring>
    let capacity: Int

    init(capacity: Int) {
        self.capacity = capacity
        ring = Lock(Ring(capacity: capacity))
    }

    /// Adds as many of `jobs[from...]` as fit; returns how many were added.
    func offer(_ jobs: borrowing [PushJob], from start: Int) -> Int {
        ring.withLock { ring in
            let free = ring.slots.count - ring.count
            let n = min(free, jobs.count - start)
            for i in 0..<n {
                ring.slots[(ring.head + ring.count + i) % ring.slots.count] = jobs[start + i]
            }
            ring.count += n
            return n
        }
    }

    /// Moves up to `limit` jobs into `destination` (consumer side).
    func drain(into destination: inout JobRing, limit: Int) -> Int {
        ring.withLock { ring in
            let n = min(limit, ring.count, destination.free)
            for _ in 0..<n {
                destination.pushBack(ring.slots[ring.head].take()!)
                ring.head = (ring.head + 1) % ring.slots.count
            }
            ring.count -= n
            return n
        }
    }

    /// Moves up to `limit` jobs to the front of `destination`, keeping their order (urgent jobs
    /// overtake what is already waiting there).
    func drainToFront(of destination: inout JobRing, limit: Int) -> Int {
        ring.withLock { ring in
            let n = min(limit, ring.count, destination.free)
            // Front-insert from the last taken to the first, so the first ends up first.
            for offset in stride(from: n - 1, through: 0, by: -1) {
                let index = (ring.head + offset) % ring.slots.count
                destination.pushFront(ring.slots[index].take()!)
            }
            ring.head = (ring.head + n) % ring.slots.count
            ring.count -= n
            return n
        }
    }

    var count: Int { ring.withLock { $0.count } }
}

/// A plain ring of jobs owned by one thread. It knows the earliest deadline among its jobs, so a
/// loop can expire queued jobs (no connection open, all streams busy) without scanning every turn.
struct JobRing {
    private var slots: [PushJob?]
    private var head = 0
    private(set) var count = 0
    /// The earliest group deadline (monotonic ns) of a job in the ring, or nil when none has one
    /// (an upper bound after jobs left: `expire` recomputes it).
    private(set) var earliestDeadline: UInt64?

    init(capacity: Int) { slots = Array(repeating: nil, count: capacity) }

    var isEmpty: Bool { count == 0 }
    var free: Int { slots.count - count }

    mutating func pushBack(_ job: PushJob) {
        precondition(count < slots.count, "JobRing overflow")
        slots[(head + count) % slots.count] = job
        count += 1
        noteDeadline(of: job)
    }

    mutating func pushFront(_ job: PushJob) {
        precondition(count < slots.count, "JobRing overflow")
        head = (head - 1 + slots.count) % slots.count
        slots[head] = job
        count += 1
        noteDeadline(of: job)
    }

    @inline(__always)
    private mutating func noteDeadline(of job: PushJob) {
        if let deadline = job.group.deadline?.nanoseconds, deadline < (earliestDeadline ?? .max) { earliestDeadline = deadline }
    }

    /// Removes every job whose deadline is at or before `now`, in order, handing each to `expired`;
    /// the others keep their order.
    mutating func expire(now: UInt64, _ expired: (PushJob) -> Void) {
        guard let earliest = earliestDeadline, earliest <= now else { return }
        earliestDeadline = nil
        for _ in 0..<count {
            let job = popFront()!
            if let deadline = job.group.deadline?.nanoseconds, deadline <= now { expired(job) } else { pushBack(job) }
        }
    }

    mutating func popFront() -> PushJob? {
        guard count > 0 else { return nil }
        let job = slots[head].take()
        head = (head + 1) % slots.count
        count -= 1
        return job
    }
}

/// Jobs waiting for their back-off, ordered by `notBefore` (a binary min-heap over an array).
struct DelayedJobs {
    private var heap: [PushJob] = []

    var isEmpty: Bool { heap.isEmpty }
    var count: Int { heap.count }
    var nextDue: UInt64? { heap.first?.notBefore }

    init(capacity: Int) { heap.reserveCapacity(capacity) }

    mutating func insert(_ job: PushJob) {
        heap.append(job)
        var child = heap.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard heap[child].notBefore < heap[parent].notBefore else { break }
            heap.swapAt(child, parent)
            child = parent
        }
    }

    /// Removes and returns the earliest job if it is due at `now`.
    mutating func popDue(now: UInt64) -> PushJob? {
        guard let first = heap.first, first.notBefore <= now else { return nil }
        let last = heap.removeLast()
        if heap.isEmpty { return first }
        heap[0] = last
        var parent = 0
        while true {
            let left = 2 * parent + 1, right = left + 1
            var smallest = parent
            if left < heap.count, heap[left].notBefore < heap[smallest].notBefore { smallest = left }
            if right < heap.count, heap[right].notBefore < heap[smallest].notBefore { smallest = right }
            if smallest == parent { break }
            heap.swapAt(parent, smallest)
            parent = smallest
        }
        return first
    }
}

import HTTPAPI
import IO

/// Where the API's slow work runs: a few long-lived threads behind a bounded queue. The HTTP thread
/// serves every client of the daemon (phones registering, backends polling, Prometheus), so a route
/// that reads or writes the store (a page fault on an SD card, a durable commit's fsync), talks to
/// Redis (up to a second when it does not answer) or scans (token statistics: seconds on millions)
/// hands its work to a worker and answers `.deferred`; the worker answers through the request's
/// `HTTPResponder`. Not a thread per request: a burst would become a burst of threads on a 2-core
/// box. When the queue is full the request is refused at once with 503 `busy` and `Retry-After`,
/// so the HTTP thread never waits for room.
///
/// The daemon has two: one for the event routes (one thread: submissions stay in arrival order, as
/// on the HTTP thread before, and the cluster's Redis link is one connection anyway) and one for
/// everything else (registrations, statistics, promotion), so phones never queue behind an event
/// submission waiting on Redis.
final class APIWorker: @unchecked Sendable {
    // @unchecked: `jobs`, `stopping` and `threads` are guarded by `lock`.
    typealias Job = @Sendable () -> HTTPAnswer

    private let lock = ConditionLock()
    private var jobs: [(job: Job, responder: HTTPResponder)] = []
    private var head = 0
    private var stopping = false
    private var threads: [OSThread] = []
    /// Jobs waiting (not those running); beyond it `busy`.
    let capacity: Int

    init(name: String, threads count: Int, capacity: Int) {
        precondition(count > 0 && capacity > 0, "an API worker needs a thread and room for a job")
        self.capacity = capacity
        let started = (0..<count).map { index in
            // Strong: the threads keep the worker until `stop`, never a job on a freed one.
            OSThread.start(name: count == 1 ? name : "\(name)-\(index)") { self.work() }
        }
        lock.withLock { threads = started }
    }

    /// `job` on a worker; its answer is sent to the request's client: a response as it is, a
    /// `.deferred` one started there (a store write answers from the writer thread).
    func answer(_ job: @escaping Job) -> HTTPAnswer {
        .deferred { [self] responder in
            let queued = lock.withLock { () -> Bool in
                guard !stopping, jobs.count - head < capacity else { return false }
                jobs.append((job, responder))
                lock.broadcast()
                return true
            }
            if !queued { responder.respond(Self.busy) }
        }
    }

    /// 503 `busy`: what a full queue (or a stopping daemon) answers, at once.
    static var busy: HTTPResponse {
        var response = HTTPResponse.error(status: 503, code: "busy", message: "the daemon has too much work queued; retry after the Retry-After seconds")
        response.headers.append(("Retry-After", "1"))
        return response
    }

    /// Refuses new jobs, lets the queued ones run (an event accepted by the store is answered or
    /// resumed at the next start either way), and joins the threads. Idempotent.
    func stop() {
        let joining = lock.withLock { () -> [OSThread] in
            stopping = true
            lock.broadcast()
            defer { threads = [] }
            return threads
        }
        for thread in joining { thread.join() }
    }

    private func work() {
        while let (job, responder) = next() {
            switch job() {
            case let .response(response): responder.respond(response)
            case let .deferred(start): start(responder)
            }
        }
    }

    /// The oldest job; nil once stopping with nothing queued.
    private func next() -> (Job, HTTPResponder)? {
        lock.withLock {
            while head == jobs.count {
                if stopping { return nil }
                lock.wait(until: MonotonicInstant.now() + .seconds(60))
            }
            let taken = jobs[head]
            head += 1
            // Compacted when drained (most of the time) or half used, so the array stays small.
            if head == jobs.count || head >= 64 && head * 2 >= jobs.count {
                jobs.removeFirst(head)
                head = 0
            }
            return taken
        }
    }
}

import Cluster
import DaemonConfiguration
import Fanout
import IO
import TokenStore
import Vocabulary

/// The events the daemon accepted, and the two threads that fan them out: one for urgent events
/// (starts: an earthquake warning) and one for the rest (updates, ends, election night). An
/// urgent event never waits behind a long bulk one; its pushes also overtake the bulk event's
/// queued pushes on the shared connections (`FanoutOptions.urgent`). An idle bulk worker helps
/// with urgent events too.
///
/// Accepted means recorded: `Service` writes the event's serial record before answering 202, so
/// a crash or restart re-queues it (`EventQueue.resume`) instead of losing it.
///
/// One serial of a key runs at a time: two at once each read the key's start progress once and
/// overwrote each other's checkpoints (a start serial 2 posted while serial 1 sent started 960 of
/// 3,000 phones twice). A later serial waits, and the running one is told it is superseded: it
/// hands out nothing more, settles and checkpoints what it sent, and the later one then starts
/// the phones it had not reached, with its own content.
package final class EventQueue: @unchecked Sendable {
    // @unchecked: every mutable field is guarded by `lock`.
    package enum State: String, Sendable { case queued, running, done, stopped, failed }

    package struct Entry: Sendable {
        package let id: String
        package let event: FanoutEvent
        package let app: AppRuntime
        package let urgent: Bool
        package var state: State = .queued
        package var report: FanoutReport?
        package var error: String?
        /// When it was accepted (seconds since 1970): at `submit`, or the store's record for one
        /// remembered after a restart.
        package var acceptedAt = Int64(WallClock.milliseconds() / 1000)
        /// Delivered over time, for the status page's curve.
        package var curve: [(seconds: Double, count: Int)] = []
    }

    private let lock = ConditionLock()
    private var entries: [String: Entry] = [:]
    /// Ids in submission order (the newest last); finished ones beyond `kept` are forgotten here
    /// (their reports stay in the store).
    private var order: [String] = []
    private var urgentWork: [String] = []
    private var bulkWork: [String] = []
    private var stopping = false
    /// The highest serial queued per event key: a running lower serial is superseded by it.
    private var newestSerial: [String: UInt32] = [:]
    private var workers: [OSThread] = []
    private let stores: StoreHolder
    private let finished: @Sendable (Entry, FanoutResult?) -> Void
    package static let kept = 200

    package init(stores: StoreHolder, finished: @escaping @Sendable (Entry, FanoutResult?) -> Void) {
        self.stores = stores
        self.finished = finished
        workers = [OSThread.start(name: "sokuho-urgent") { [unowned self] in self.work(urgentOnly: true) },
                   OSThread.start(name: "sokuho-events") { [unowned self] in self.work(urgentOnly: false) }]
    }

    package static func id(key: String, serial: UInt32) -> String { key + "/" + String(serial) }

    /// Queues an event (already recorded in the store). A serial already queued or running is
    /// not queued twice.
    package func submit(_ event: FanoutEvent, app: AppRuntime) -> Entry {
        let id = Self.id(key: event.key, serial: event.serial)
        return lock.withLock {
            if let existing = entries[id], existing.state == .queued || existing.state == .running { return existing }
            let entry = Entry(id: id, event: event, app: app, urgent: event.kind == .start)
            entries[id] = entry
            newestSerial[event.key] = max(newestSerial[event.key] ?? 0, event.serial)
            order.removeAll { $0 == id }
            order.append(id)
            if entry.urgent { urgentWork.append(id) } else { bulkWork.append(id) }
            forgetOld()
            lock.broadcast()
            return entry
        }
    }

    /// Events that ended before this process started (oldest first), listed as they ended:
    /// nothing is queued. A restart or an upgrade would otherwise empty the list while each
    /// event's own URL still answers from the store.
    package func remember(_ ended: [(event: FanoutEvent, app: AppRuntime, state: State, report: FanoutReport?, acceptedAt: Int64)]) {
        lock.withLock {
            for (event, app, state, report, acceptedAt) in ended {
                let id = Self.id(key: event.key, serial: event.serial)
                guard entries[id] == nil else { continue }
                var entry = Entry(id: id, event: event, app: app, urgent: event.kind == .start)
                entry.state = state
                entry.report = report
                entry.acceptedAt = acceptedAt
                entries[id] = entry
                order.append(id)
            }
            forgetOld()
        }
    }

    package func entry(_ id: String) -> Entry? { lock.withLock { entries[id] } }

    /// Whether a queued or running event still needs `runtime` (a reload retired it).
    package func uses(_ runtime: AppRuntime) -> Bool {
        lock.withLock { entries.values.contains { $0.app === runtime && ($0.state == .queued || $0.state == .running) } }
    }

    /// Queued events of a replaced runtime run on its successor (running ones finish where they are).
    package func move(from old: AppRuntime, to new: AppRuntime) {
        lock.withLock {
            for (id, entry) in entries where entry.app === old && entry.state == .queued {
                entries[id] = Entry(id: entry.id, event: entry.event, app: new, urgent: entry.urgent)
            }
        }
    }

    /// The newest first.
    package func recent(limit: Int = 50) -> [Entry] {
        lock.withLock { order.suffix(limit).reversed().compactMap { entries[$0] } }
    }

    package var counts: (queued: Int, running: Int) {
        lock.withLock {
            (entries.values.filter { $0.state == .queued }.count, entries.values.filter { $0.state == .running }.count)
        }
    }

    /// Stops taking queued events, lets the running ones finish (their checkpoints are in the
    /// store either way), and ends the workers. Queued events stay recorded: the next start
    /// resumes them.
    package func stop() {
        lock.withLock {
            stopping = true
            lock.broadcast()
        }
        for worker in workers { worker.join() }
        workers = []
    }

    private func forgetOld() {
        while order.count > Self.kept, let index = order.firstIndex(where: { [.done, .stopped, .failed].contains(entries[$0]?.state) }) {
            entries[order.remove(at: index)] = nil
        }
    }

    private func work(urgentOnly: Bool) {
        while let id = next(urgentOnly: urgentOnly) {
            guard let entry = entry(id) else { continue }
            var options = entry.app.fanout
            options.urgent = entry.urgent
            let (key, serial) = (entry.event.key, entry.event.serial)
            options.supersededBy = { [unowned self] in
                self.lock.withLock { self.newestSerial[key].flatMap { $0 > serial ? $0 : nil } }
            }
            let result: FanoutResult?
            var error: String?
            do { result = try Fanout.run(entry.event, store: stores.current, options: options) } catch let failure {
                result = nil
                error = failure.message
            }
            let done = lock.withLock { () -> Entry in
                var updated = entries[id] ?? entry
                updated.report = result?.report
                updated.curve = result?.delivered ?? []
                updated.error = error
                updated.state = error != nil ? .failed : (result?.report.stopped != nil ? .stopped : .done)
                entries[id] = updated
                lock.broadcast()  // a later serial of this key may run now
                return updated
            }
            finished(done, result)
        }
    }

    /// The next event for a worker, marked running: urgent ones first, and none whose key has a
    /// serial running already (it waits for that run to end); nil when stopping.
    private func next(urgentOnly: Bool) -> String? {
        lock.withLock {
            while !stopping {
                let running = Set(entries.values.filter { $0.state == .running }.map(\.event.key))
                let free = { (id: String) -> Bool in self.entries[id].map { !running.contains($0.event.key) } ?? true }
                var id: String?
                if let index = urgentWork.firstIndex(where: free) {
                    id = urgentWork.remove(at: index)
                } else if !urgentOnly, let index = bulkWork.firstIndex(where: free) {
                    id = bulkWork.remove(at: index)
                }
                if let id {
                    entries[id]?.state = .running
                    return id
                }
                lock.wait(until: MonotonicInstant.now() + .seconds(60))
            }
            return nil
        }
    }
}

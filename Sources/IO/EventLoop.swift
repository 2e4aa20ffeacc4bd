#if canImport(Glibc)
import Glibc
#endif
import CSystem
import Synchronization
import Vocabulary

/// Something an event loop drives: a socket it polls, plus work it does every turn.
public protocol EventLoopSource: AnyObject {
    /// The file descriptor to poll, or -1 while there is none.
    var fileDescriptor: Int32 { get }
    /// Called every loop turn before polling: queue new work, flush output. A socket source returns
    /// whether it waits for its socket to become writable (the loop then polls for EPOLLOUT); a
    /// driver returns whether it has more to do at once (the loop then does not sleep).
    func prepare(now: MonotonicInstant) -> Bool
    /// Called with the epoll events of `fileDescriptor`.
    func handle(events: UInt32, now: MonotonicInstant)
}

/// One epoll loop on one thread. Sources (connections, listeners) belong to exactly one loop and are
/// only touched on its thread; other threads hand work over with `execute`, which wakes the loop
/// through an eventfd. Time-driven work (deadlines, PINGs, back-off, delayed answers) arms
/// `LoopTimer`s: the loop sleeps exactly until the earliest one, there is no periodic tick. There is
/// no Task and no lock per push: a connection refills itself from its own queue in `prepare`.
public final class EventLoop: @unchecked Sendable {
    // @unchecked: everything but `pending` and `stopping` is touched only on the loop thread
    // (asserted in debug builds); `pending` is behind a Lock.
    private let epoll: FileDescriptor
    private let wakeDescriptor: FileDescriptor
    /// Drivers (sources without a descriptor, e.g. a sender that feeds connections) are prepared
    /// before sockets each turn, so what they submit is flushed in the same turn.
    private var drivers: [EventLoopSource] = []
    private var sockets: [EventLoopSource] = []
    /// Polled descriptors by registration id, which is what epoll hands back: a descriptor closed and
    /// reused by another source between two polls can never deliver its events to the wrong one.
    private struct Registration { let source: EventLoopSource; let fd: Int32; var events: UInt32 }
    private var registrations: [UInt64: Registration] = [:]
    private var registrationOf: [ObjectIdentifier: UInt64] = [:]
    private var nextRegistration: UInt64 = 1  // 0 is the wake-up eventfd
    private var timers = TimerHeap()
    private let pending = Lock<[@Sendable () -> Void]>([])
    private let stopping = Atomic<Bool>(false)
    private var threadID = pthread_t()
    public let name: String
    /// Turns taken so far (any thread may read it): an idle loop takes none, so a test or a metric
    /// can tell sleeping from spinning.
    public let turns = Atomic<Int>(0)

    /// Throws when the process is out of descriptors (EMFILE, ENFILE) or kernel memory: a loop
    /// costs two (its epoll and its eventfd), and running out must refuse the work that asked for
    /// one, never stop the daemon.
    public init(name: String = "sokuho-loop") throws(TransportError) {
        self.name = name
        epoll = FileDescriptor(adopting: try Syscall.check("epoll_create1") { epoll_create1(Int32(EPOLL_CLOEXEC)) })
        wakeDescriptor = FileDescriptor(adopting: try Syscall.check("eventfd") { eventfd(0, Int32(EFD_NONBLOCK | EFD_CLOEXEC)) })
        var event = epoll_event(events: EPOLLIN.rawValue, data: epoll_data_t(u64: 0))
        let (epollFD, wakeFD) = (epoll.rawValue, wakeDescriptor.rawValue)
        try Syscall.check("epoll_ctl(ADD eventfd)") { epoll_ctl(epollFD, EPOLL_CTL_ADD, wakeFD, &event) }
    }

    /// Whether the caller runs on this loop's thread.
    public var inLoop: Bool { pthread_equal(pthread_self(), threadID) != 0 }

    /// Debug builds stop at once when loop-confined state is touched from another thread.
    @inline(__always)
    public func assertInLoop(_ what: @autoclosure () -> String = "", file: StaticString = #fileID, line: UInt = #line) {
        assert(inLoop, "\(name): \(what()) called off its loop thread", file: file, line: line)
    }

    /// Runs `work` on the loop thread at the start of its next turn.
    public func execute(_ work: @escaping @Sendable () -> Void) {
        pending.withLock { $0.append(work) }
        wake()
    }

    /// Wakes the loop (from any thread) so it calls every source's `prepare` again.
    public func wake() {
        var one: UInt64 = 1
        let fd = wakeDescriptor.rawValue
        // EAGAIN: the counter is saturated, the loop will wake anyway.
        Syscall.mustSucceed("write(eventfd)", allowing: EAGAIN) { Int32(truncatingIfNeeded: Glibc.write(fd, &one, 8)) }
    }

    /// Adds a source; call on the loop thread. `driver: true` for a source that has no descriptor of
    /// its own and feeds other sources.
    public func add(_ source: EventLoopSource, driver: Bool = false) {
        assertInLoop("add")
        if driver {
            if !drivers.contains(where: { $0 === source }) { drivers.append(source) }
        } else if !sockets.contains(where: { $0 === source }) {
            sockets.append(source)
        }
    }

    /// Removes a source and stops polling its descriptor; call on the loop thread before closing the fd.
    public func remove(_ source: EventLoopSource) {
        assertInLoop("remove")
        drivers.removeAll { $0 === source }
        sockets.removeAll { $0 === source }
        unregister(source)
    }

    /// Arms (or re-arms) `timer` to fire at `deadline`; call on the loop thread.
    public func arm(_ timer: LoopTimer, at deadline: MonotonicInstant) {
        assertInLoop("arm")
        timers.arm(timer, at: deadline)
    }

    /// Disarms `timer` if it is armed.
    public func disarm(_ timer: LoopTimer) {
        assertInLoop("disarm")
        timers.disarm(timer)
    }

    /// Asks the loop to return from `run` after its current turn.
    public func stop() {
        stopping.store(true, ordering: .releasing)
        wake()
    }

    /// Runs the loop on the calling thread until `stop`.
    public func run() {
        threadID = pthread_self()
        var events = [epoll_event](repeating: epoll_event(), count: 256)
        while !stopping.load(ordering: .acquiring) { turn(&events) }
        // Run what was handed over last, so nothing handed to a stopping loop is silently dropped.
        for work in pending.withLock({ queue -> [@Sendable () -> Void] in defer { queue.removeAll() }; return queue }) { work() }
        // A stopped loop lets go of its sources and timers. A source holds its loop, so keeping them
        // kept both alive for ever, with the loop's epoll and eventfd: every one-off pool leaked two
        // descriptors and its buffers until the daemon ran out (issue 21).
        drivers.removeAll()
        sockets.removeAll()
        registrations.removeAll()
        registrationOf.removeAll()
        timers.removeAll()
    }

    /// Runs the loop on a new thread; returns the thread so the owner can join it after `stop`.
    public func start() -> OSThread {
        OSThread.start(name: name) { [self] in self.run() }
    }

    private func turn(_ events: inout [epoll_event]) {
        turns.add(1, ordering: .relaxed)
        let work = pending.withLock { queue -> [@Sendable () -> Void] in
            if queue.isEmpty { return [] }
            defer { queue.removeAll(keepingCapacity: true) }
            return queue
        }
        for item in work { item() }

        var now = MonotonicInstant.now()
        var busy = false
        for driver in drivers where driver.prepare(now: now) { busy = true }
        for source in sockets {
            // A blocked socket wakes us through EPOLLOUT; there is no reason to spin for it.
            update(source, wantsWrite: source.prepare(now: now))
        }
        let timeout = busy ? 0 : milliseconds(until: timers.earliest, from: now)
        let epollFD = epoll.rawValue
        let count = events.withUnsafeMutableBufferPointer { buffer in
            // EINTR (a signal) is an early wake-up, not a failure; anything else is a broken loop.
            let n = epoll_wait(epollFD, buffer.baseAddress, Int32(buffer.count), timeout)
            if n < 0 && errno != EINTR { preconditionFailure("epoll_wait failed: \(String(cString: strerror(errno)))") }
            return max(0, n)
        }
        now = MonotonicInstant.now()
        for index in 0..<Int(count) {
            let id = events[index].data.u64
            if id == 0 {
                var value: UInt64 = 0
                let fd = wakeDescriptor.rawValue
                Syscall.mustSucceed("read(eventfd)", allowing: EAGAIN) { Int32(truncatingIfNeeded: Glibc.read(fd, &value, 8)) }
                continue
            }
            registrations[id]?.source.handle(events: events[index].events, now: now)
        }
        // Only timers due now fire this turn: one re-armed to the past by its own action fires on
        // the next turn (epoll then does not wait), so a timer can never spin inside one turn.
        var due: [LoopTimer] = []
        while let timer = timers.popDue(now: now) { due.append(timer) }
        for timer in due where !timer.isArmed { timer.action(now) }
    }

    /// epoll_wait's timeout: until the earliest timer (rounded up, so it is due when we wake), or
    /// for ever when no timer is armed.
    private func milliseconds(until deadline: MonotonicInstant?, from now: MonotonicInstant) -> Int32 {
        guard let deadline else { return -1 }
        if deadline <= now { return 0 }
        let nanoseconds = deadline.nanoseconds - now.nanoseconds
        return Int32(clamping: (nanoseconds + 999_999) / 1_000_000)
    }

    private func update(_ source: EventLoopSource, wantsWrite: Bool) {
        let fd = source.fileDescriptor
        let key = ObjectIdentifier(source)
        let wanted = EPOLLIN.rawValue | EPOLLRDHUP.rawValue | (wantsWrite ? EPOLLOUT.rawValue : 0)
        if let id = registrationOf[key], let registration = registrations[id] {
            if registration.fd == fd {
                if registration.events == wanted { return }
                if control(EPOLL_CTL_MOD, fd, id: id, events: wanted, source: source) { registrations[id]?.events = wanted }
                return
            }
            unregister(source)  // a new descriptor (a reconnect): a new registration
        }
        guard fd >= 0 else { return }
        let id = nextRegistration
        nextRegistration += 1
        guard control(EPOLL_CTL_ADD, fd, id: id, events: wanted, source: source) else { return }
        registrations[id] = Registration(source: source, fd: fd, events: wanted)
        registrationOf[key] = id
    }

    private func unregister(_ source: EventLoopSource) {
        guard let id = registrationOf.removeValue(forKey: ObjectIdentifier(source)),
              let registration = registrations.removeValue(forKey: id) else { return }
        var unused = epoll_event()
        let epollFD = epoll.rawValue
        // ENOENT/EBADF: the descriptor was closed already, and epoll forgot it with its last reference.
        do throws(TransportError) {
            try Syscall.check("epoll_ctl(DEL)") { epoll_ctl(epollFD, EPOLL_CTL_DEL, registration.fd, &unused) }
        } catch {
            if case let .socket(_, code) = error, code == ENOENT || code == EBADF { return }
            preconditionFailure("\(error)")
        }
    }

    /// epoll_ctl ADD/MOD; a failure (no memory, a descriptor epoll cannot poll) is handed to the
    /// source as an error event, so it fails its streams and closes instead of waiting for ever.
    private func control(_ operation: Int32, _ fd: Int32, id: UInt64, events: UInt32, source: EventLoopSource) -> Bool {
        var event = epoll_event(events: events, data: epoll_data_t(u64: id))
        let epollFD = epoll.rawValue
        do throws(TransportError) {
            try Syscall.check("epoll_ctl") { epoll_ctl(epollFD, operation, fd, &event) }
            return true
        } catch let .socket(_, code) where operation == EPOLL_CTL_MOD && code == ENOENT {
            // The descriptor was closed and its number reused without `remove`: epoll forgot the old
            // one, so this is a new registration under the same id.
            return control(EPOLL_CTL_ADD, fd, id: id, events: events, source: source)
        } catch {
            source.handle(events: EPOLLERR.rawValue, now: MonotonicInstant.now())
            return false
        }
    }
}

#if canImport(Glibc)
import Glibc
#endif
import CSystem
import Synchronization

/// Something an event loop drives: a socket it polls, plus work it does every turn.
public protocol EventLoopSource: AnyObject {
    /// The file descriptor to poll, or -1 while there is none.
    var fileDescriptor: Int32 { get }
    /// Called every loop turn before polling: queue new work, flush output. A socket source returns
    /// whether it waits for its socket to become writable (the loop then polls for EPOLLOUT); a
    /// driver returns whether it has more to do at once (the loop then does not sleep).
    func prepare(now: UInt64) -> Bool
    /// Called with the epoll events of `fileDescriptor`.
    func handle(events: UInt32, now: UInt64)
    /// Called about every `tickInterval`: deadlines, pings, timeouts.
    func tick(now: UInt64)
}

/// One epoll loop on one thread. Sources (connections, listeners) belong to exactly one loop and are
/// only touched on its thread; other threads hand work over with `execute`, which wakes the loop
/// through an eventfd. There is no Task and no lock per push: a connection refills itself from its
/// own queue in `prepare`.
public final class EventLoop: @unchecked Sendable {
    // @unchecked: `drivers`, `sockets` and `registered` are touched only on the loop thread; `pending` is behind a Mutex.
    private let epollFD: Int32
    private let wakeFD: Int32
    /// Drivers (sources without a descriptor, e.g. a sender that feeds connections) are prepared
    /// before sockets each turn, so what they submit is flushed in the same turn.
    private var drivers: [EventLoopSource] = []
    private var sockets: [EventLoopSource] = []
    private var registered: [Int32: (source: EventLoopSource, events: UInt32)] = [:]
    private let pending = Mutex<[@Sendable () -> Void]>([])
    private let stopping = Atomic<Bool>(false)
    private var threadID = pthread_t()
    public let name: String
    /// How often `tick` runs.
    public let tickInterval: UInt64 = 20_000_000
    private var lastTick: UInt64 = 0

    public init(name: String = "sokuho-loop") {
        self.name = name
        epollFD = epoll_create1(Int32(EPOLL_CLOEXEC))
        wakeFD = eventfd(0, Int32(EFD_NONBLOCK | EFD_CLOEXEC))
        precondition(epollFD >= 0 && wakeFD >= 0, "epoll/eventfd unavailable: errno \(errno)")
        var event = epoll_event(events: EPOLLIN.rawValue, data: epoll_data_t(fd: wakeFD))
        epoll_ctl(epollFD, EPOLL_CTL_ADD, wakeFD, &event)
    }

    deinit {
        close(epollFD)
        close(wakeFD)
    }

    /// Whether the caller runs on this loop's thread.
    public var inLoop: Bool { pthread_equal(pthread_self(), threadID) != 0 }

    /// Runs `work` on the loop thread at the start of its next turn.
    public func execute(_ work: @escaping @Sendable () -> Void) {
        pending.withLock { $0.append(work) }
        wake()
    }

    /// Wakes the loop (from any thread) so it calls every source's `prepare` again.
    public func wake() {
        var one: UInt64 = 1
        _ = Glibc.write(wakeFD, &one, 8)
    }

    /// Adds a source; call on the loop thread. `driver: true` for a source that has no descriptor of
    /// its own and feeds other sources.
    public func add(_ source: EventLoopSource, driver: Bool = false) {
        if driver {
            if !drivers.contains(where: { $0 === source }) { drivers.append(source) }
        } else if !sockets.contains(where: { $0 === source }) {
            sockets.append(source)
        }
    }

    /// Removes a source and stops polling its descriptor; call on the loop thread before closing the fd.
    public func remove(_ source: EventLoopSource) {
        drivers.removeAll { $0 === source }
        sockets.removeAll { $0 === source }
        let fd = source.fileDescriptor
        if fd >= 0, registered[fd] != nil {
            epoll_ctl(epollFD, EPOLL_CTL_DEL, fd, nil)
            registered[fd] = nil
        }
    }

    /// Forgets a descriptor about to be closed (a source that reconnects calls this first).
    public func forget(fileDescriptor fd: Int32) {
        if registered[fd] != nil {
            epoll_ctl(epollFD, EPOLL_CTL_DEL, fd, nil)
            registered[fd] = nil
        }
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
        while !stopping.load(ordering: .acquiring) {
            turn(&events, maximumWaitMilliseconds: Int32(tickInterval / 1_000_000))
        }
        // Run what was handed over last, so nothing handed to a stopping loop is silently dropped.
        for work in pending.withLock({ queue -> [@Sendable () -> Void] in defer { queue.removeAll() }; return queue }) { work() }
    }

    /// Runs the loop on a new thread; returns the thread so the owner can join it after `stop`.
    public func start() -> OSThread {
        OSThread.start(name: name) { [self] in self.run() }
    }

    private func turn(_ events: inout [epoll_event], maximumWaitMilliseconds: Int32) {
        let work = pending.withLock { queue -> [@Sendable () -> Void] in
            if queue.isEmpty { return [] }
            defer { queue.removeAll(keepingCapacity: true) }
            return queue
        }
        for item in work { item() }

        var now = MonotonicClock.nanoseconds()
        var busy = false
        for driver in drivers where driver.prepare(now: now) { busy = true }
        for source in sockets {
            // A blocked socket wakes us through EPOLLOUT; there is no reason to spin for it.
            update(source, wantsWrite: source.prepare(now: now))
        }
        let count = events.withUnsafeMutableBufferPointer {
            epoll_wait(epollFD, $0.baseAddress, Int32($0.count), busy ? Int32(0) : maximumWaitMilliseconds)
        }
        now = MonotonicClock.nanoseconds()
        if count > 0 {
            for index in 0..<Int(count) {
                let fd = events[index].data.fd
                if fd == wakeFD {
                    var value: UInt64 = 0
                    _ = Glibc.read(wakeFD, &value, 8)
                    continue
                }
                registered[fd]?.source.handle(events: events[index].events, now: now)
            }
        }
        if now &- lastTick >= tickInterval {
            lastTick = now
            for source in drivers { source.tick(now: now) }
            for source in sockets { source.tick(now: now) }
        }
    }

    private func update(_ source: EventLoopSource, wantsWrite: Bool) {
        let fd = source.fileDescriptor
        guard fd >= 0 else { return }
        let wanted = EPOLLIN.rawValue | EPOLLRDHUP.rawValue | (wantsWrite ? EPOLLOUT.rawValue : 0)
        if let current = registered[fd] {
            if current.events == wanted && current.source === source { return }
            var event = epoll_event(events: wanted, data: epoll_data_t(fd: fd))
            epoll_ctl(epollFD, EPOLL_CTL_MOD, fd, &event)
        } else {
            var event = epoll_event(events: wanted, data: epoll_data_t(fd: fd))
            epoll_ctl(epollFD, EPOLL_CTL_ADD, fd, &event)
        }
        registered[fd] = (source, wanted)
    }
}

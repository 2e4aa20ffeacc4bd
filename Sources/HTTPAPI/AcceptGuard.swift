#if canImport(Glibc)
import Glibc
#endif
import CLibEvent
import CSystem
import IO
import Synchronization
import Vocabulary

/// What the API does when the process runs out of descriptors. libevent's listener treats EMFILE
/// from accept() as an error, not as "try later": the waiting connection stays in the backlog, the
/// listening socket stays readable, and the loop spins at full CPU on it without answering anyone.
/// Instead (the reserve-descriptor technique of many servers): one descriptor is kept open on
/// /dev/null; on EMFILE it is closed, the waiting connection accepted and answered 503 with
/// `Retry-After` — the client learns to come back, and nothing waits for a timeout — and its
/// descriptor turned back into the reserve in one step (`dup3` from a second, kept /dev/null
/// descriptor). When even that fails, the listener pauses for `pause` and tries again.
/// Confined to the server's loop thread; `refused` is readable anywhere.
final class AcceptGuard {
    private var reserve: Int32 = -1
    /// Never closed while the guard watches: the source `dup3` copies into a refused connection's
    /// slot, which closes the connection and makes the slot the reserve again in one step. Closing
    /// the connection and reopening /dev/null left a moment in which another thread's open() took
    /// the freed slot (the credential check's channel connection, opening late on a loaded
    /// machine): the reserve was lost, the listener paused, and connections waited in the backlog
    /// instead of getting their 503.
    private var keeper: Int32 = -1
    private var base: OpaquePointer?
    private var listeners: [OpaquePointer] = []
    private var pauseEvent: OpaquePointer?
    /// Connections answered 503 (or dropped) for want of a descriptor.
    let refused: Atomic<Int>
    static let pause: Duration = .milliseconds(100)

    init() {
        refused = Atomic(0)
        reserve = Self.openReserve()
        keeper = Self.openReserve()
    }

    /// Watches `listener` (an evconnlistener of `base`); call on the creating thread before the loop runs.
    func watch(_ listener: OpaquePointer, base: OpaquePointer, context: UnsafeMutableRawPointer) throws(LibEvent.Failure) {
        self.base = base
        listeners.append(listener)
        // The error callback gets the listener's user data, which is evhttp's (its `struct evhttp`),
        // not ours: the guard is found by its listener instead.
        Self.guards.withLock { $0[UInt(bitPattern: Int(bitPattern: UnsafeRawPointer(listener)))] = Weak(self) }
        evconnlistener_set_error_cb(listener) { listener, _ in
            let code = errno
            guard let listener, let guarding = AcceptGuard.guarding(listener) else { return }
            guarding.acceptFailed(listener, errno: code)
        }
        if pauseEvent == nil {
            pauseEvent = try LibEvent.require("event_new", event_new(base, -1, 0, { _, _, context in
                guard let context else { return }
                Unmanaged<EventHTTPCore>.fromOpaque(context).takeUnretainedValue().acceptGuard.resume()
            }, context))
        }
    }

    private struct Weak: @unchecked Sendable {
        // @unchecked: the guard is only used on its server's loop thread, where its callback runs.
        weak var guarding: AcceptGuard?
        init(_ guarding: AcceptGuard) { self.guarding = guarding }
    }

    /// Every watched listener's guard, by the listener's address.
    private static let guards = Lock<[UInt: Weak]>([:])

    private static func guarding(_ listener: OpaquePointer) -> AcceptGuard? {
        guards.withLock { $0[UInt(bitPattern: Int(bitPattern: UnsafeRawPointer(listener)))]?.guarding }
    }

    /// Frees the pause event and the reserve (the listeners are evhttp's).
    func close() {
        Self.guards.withLock { guards in
            for listener in listeners { guards[UInt(bitPattern: Int(bitPattern: UnsafeRawPointer(listener)))] = nil }
        }
        if let pauseEvent { event_free(pauseEvent) }
        pauseEvent = nil
        listeners = []
        if reserve >= 0 { Glibc.close(reserve) }
        if keeper >= 0 { Glibc.close(keeper) }
        reserve = -1
        keeper = -1
    }

    /// libevent's error callback: accept() failed with `code`.
    private func acceptFailed(_ listener: OpaquePointer, errno code: Int32) {
        // Out of descriptors (the process's or the system's) or of kernel memory for one.
        guard code == EMFILE || code == ENFILE || code == ENOBUFS || code == ENOMEM else { return }
        if reserve >= 0 {
            Glibc.close(reserve)
            reserve = -1
            if let connection = try? Socket.accept(evconnlistener_get_fd(listener)) {
                let slot = connection.release()
                refuse(slot)
                refused.add(1, ordering: .relaxed)
                // Closes the connection and puts the reserve in its slot, with no moment between.
                if keeper >= 0 && sokuho_dup3(keeper, slot, O_CLOEXEC) == slot {
                    reserve = slot
                } else {
                    Glibc.close(slot)
                    reserve = Self.openReserve()
                }
                // Answered one and got the reserve back: the next waiting connection is handled the same way.
                if reserve >= 0 { return }
            }
        }
        pauseAccepting()
    }

    /// A fixed 503 (no allocation, no parsing: there may be no descriptor or memory to spare),
    /// then an orderly close: the request is read and dropped first, so the close does not reset
    /// the connection under the answer. The caller closes `connection`.
    private func refuse(_ connection: Int32) {
        Self.busyResponse.withUnsafeBytes { bytes in _ = send(connection, bytes.baseAddress, bytes.count, Int32(MSG_NOSIGNAL)) }
        shutdown(connection, Int32(SHUT_WR))
        var scratch = (UInt64(0), UInt64(0), UInt64(0), UInt64(0), UInt64(0), UInt64(0), UInt64(0), UInt64(0))
        for _ in 0..<16 {
            let n = withUnsafeMutableBytes(of: &scratch) { recv(connection, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            if n <= 0 { break }
        }
    }

    private func pauseAccepting() {
        guard let pauseEvent else { return }
        for listener in listeners { _ = try? LibEvent.check("evconnlistener_disable", evconnlistener_disable(listener)) }
        let (seconds, attoseconds) = Self.pause.components
        var timeout = timeval(tv_sec: Int(seconds), tv_usec: Int(attoseconds / 1_000_000_000_000))
        _ = try? LibEvent.check("event_add", event_add(pauseEvent, &timeout))
    }

    private func resume() {
        if reserve < 0 { reserve = Self.openReserve() }
        for listener in listeners { _ = try? LibEvent.check("evconnlistener_enable", evconnlistener_enable(listener)) }
    }

    private static func openReserve() -> Int32 { open("/dev/null", O_RDONLY | O_CLOEXEC) }

    static let busyResponse: [UInt8] = {
        let body = HTTPResponse.error(status: 503, code: "out_of_descriptors",
                                      message: "the daemon is out of file descriptors; retry after the Retry-After seconds").body
        let head = "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nRetry-After: 1\r\nConnection: close\r\n"
            + "Content-Length: \(body.count)\r\n\r\n"
        return Array(head.utf8) + body
    }()
}

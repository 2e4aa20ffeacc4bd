#if canImport(Glibc)
import Glibc
#endif

/// One non-blocking TCP connect to one address, polled by the loop until the socket is writable.
/// A connection races several of these (Happy Eyeballs, RFC 8305): the first to finish wins and
/// hands its descriptor over; the others are closed. Owns its descriptor until `takeDescriptor()`.
final class ConnectAttempt: EventLoopSource {
    let address: SocketAddress
    let started: UInt64
    private(set) var fileDescriptor: Int32
    /// Called once, on the loop thread, when the connect finished (0) or failed (an errno).
    private let finished: (ConnectAttempt, Int32) -> Void

    init(address: SocketAddress, now: UInt64, finished: @escaping (ConnectAttempt, Int32) -> Void) throws(TransportError) {
        self.address = address
        started = now
        self.finished = finished
        fileDescriptor = try Socket.startConnect(to: address)
    }

    deinit { if fileDescriptor >= 0 { Glibc.close(fileDescriptor) } }

    /// The connected descriptor, now owned by the caller; the loop no longer polls it for us.
    func takeDescriptor(from loop: EventLoop) -> Int32 {
        loop.remove(self)
        let fd = fileDescriptor
        fileDescriptor = -1
        return fd
    }

    /// Stops polling and closes the socket (a lost race, a timeout, a failure).
    func cancel(on loop: EventLoop) {
        loop.remove(self)
        if fileDescriptor >= 0 { Glibc.close(fileDescriptor) }
        fileDescriptor = -1
    }

    func prepare(now: UInt64) -> Bool { fileDescriptor >= 0 }  // wait for EPOLLOUT: the connect's end

    func handle(events: UInt32, now: UInt64) {
        guard fileDescriptor >= 0 else { return }
        finished(self, Socket.pendingError(fileDescriptor))
    }

    func tick(now: UInt64) {}  // the owning connection times its attempts
}

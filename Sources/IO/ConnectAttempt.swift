#if canImport(Glibc)
import Glibc
#endif

/// One non-blocking TCP connect to one address, polled by the loop until the socket is writable.
/// A connection races several of these (Happy Eyeballs, RFC 8305): the first to finish wins and
/// hands its descriptor over; the others are closed. Owns its descriptor until `takeDescriptor()`.
public final class ConnectAttempt: EventLoopSource {
    public let address: SocketAddress
    public let started: MonotonicInstant
    private var socket: FileDescriptor?
    /// Called once, on the loop thread, when the connect finished (0) or failed (an errno).
    private let finished: (ConnectAttempt, Int32) -> Void

    public init(address: SocketAddress, now: MonotonicInstant, finished: @escaping (ConnectAttempt, Int32) -> Void) throws(TransportError) {
        self.address = address
        started = now
        self.finished = finished
        socket = try Socket.startConnect(to: address)
    }

    public var fileDescriptor: Int32 { socket?.rawValue ?? -1 }
    public var isOpen: Bool { socket != nil }

    /// The connected descriptor, now owned by the caller; the loop no longer polls it for us.
    public func takeDescriptor(from loop: EventLoop) -> FileDescriptor? {
        loop.remove(self)
        return socket.take()
    }

    /// Stops polling and closes the socket (a lost race, a timeout, a failure).
    public func cancel(on loop: EventLoop) {
        loop.remove(self)
        socket = nil
    }

    public func prepare(now: MonotonicInstant) -> Bool { socket != nil }  // wait for EPOLLOUT: the connect's end

    public func handle(events: UInt32, now: MonotonicInstant) {
        guard let fd = socket?.rawValue else { return }
        finished(self, Socket.pendingError(fd))
    }
}

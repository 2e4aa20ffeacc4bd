#if canImport(Glibc)
import Glibc
#endif
import Crypto
import IO

/// A TLS + HTTP/2 listener on one event loop: accepts connections and gives each to the handler.
public final class HTTP2Server: EventLoopSource, @unchecked Sendable {
    // @unchecked: used only on its loop's thread after `start`.
    public let loop: EventLoop
    public let address: SocketAddress
    private let listener: Socket.Listener
    private let tls: TLSConfiguration
    private let handler: HTTP2RequestHandler
    private var connections: [ObjectIdentifier: ServerConnection] = [:]
    private var nextID = 1
    /// SETTINGS_MAX_CONCURRENT_STREAMS announced to new connections.
    public var maximumStreams: UInt32

    /// Binds `host:port` (port 0: any free port; see `address.port`).
    public init(loop: EventLoop, host: String, port: Int, tls: TLSConfiguration, handler: HTTP2RequestHandler,
                maximumStreams: UInt32 = 1000, reusePort: Bool = false) throws(TransportError) {
        self.loop = loop
        self.tls = tls
        self.handler = handler
        self.maximumStreams = maximumStreams
        listener = try Socket.listen(host: host, port: port, reusePort: reusePort)
        address = listener.address
    }

    public var port: Int { address.port }

    /// Starts accepting; call on the loop thread (or through `loop.execute`).
    public func start() { loop.add(self) }

    /// Stops accepting and drops every connection abruptly.
    public func stop() {
        loop.remove(self)
        for connection in connections.values { connection.abort() }
        connections.removeAll()
    }

    /// Every open connection (the simulator's fault injection walks them).
    public var openConnections: [ServerConnection] { Array(connections.values) }

    public var fileDescriptor: Int32 { listener.descriptor.rawValue }
    public func prepare(now: MonotonicInstant) -> Bool { false }

    public func handle(events: UInt32, now: MonotonicInstant) {
        while true {
            let socket: FileDescriptor
            do throws(TransportError) {
                guard let accepted = try Socket.accept(listener.descriptor.rawValue) else { return }
                socket = accepted
            } catch {
                // Out of descriptors or memory: stop for this turn, the listener stays readable.
                return
            }
            // A handshake set-up that fails closes the socket with `socket` (still its owner then).
            guard let connection = try? ServerConnection(loop: loop, socket: socket, id: nextID, tls: tls, handler: self.tracking,
                                                         maximumStreams: maximumStreams) else { continue }
            nextID += 1
            connections[ObjectIdentifier(connection)] = connection
            loop.add(connection)
        }
    }

    /// Wraps the user's handler to forget closed connections.
    private lazy var tracking: HTTP2RequestHandler = Tracker(server: self, inner: handler)

    private final class Tracker: HTTP2RequestHandler {
        unowned let server: HTTP2Server
        let inner: HTTP2RequestHandler
        init(server: HTTP2Server, inner: HTTP2RequestHandler) { self.server = server; self.inner = inner }
        func handle(_ request: ServerRequest, on connection: ServerConnection) { inner.handle(request, on: connection) }
        func connectionOpened(_ connection: ServerConnection) { inner.connectionOpened(connection) }
        func connectionClosed(_ connection: ServerConnection) {
            server.connections[ObjectIdentifier(connection)] = nil
            inner.connectionClosed(connection)
        }
        func responseSent(_ response: ServerResponse, on connection: ServerConnection) { inner.responseSent(response, on: connection) }
    }
}

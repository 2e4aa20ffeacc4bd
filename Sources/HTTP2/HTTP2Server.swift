#if canImport(Glibc)
import Glibc
#endif
import Crypto

/// A TLS + HTTP/2 listener on one event loop: accepts connections and gives each to the handler.
public final class HTTP2Server: EventLoopSource, @unchecked Sendable {
    // @unchecked: used only on its loop's thread after `start`.
    public let loop: EventLoop
    public let address: SocketAddress
    private let listenFD: Int32
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
        (listenFD, address) = try Socket.listen(host: host, port: port, reusePort: reusePort)
    }

    deinit { Glibc.close(listenFD) }

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

    public var fileDescriptor: Int32 { listenFD }
    public func prepare(now: UInt64) -> Bool { false }
    public func tick(now: UInt64) {}

    public func handle(events: UInt32, now: UInt64) {
        while true {
            let fd = accept(listenFD, nil, nil)
            if fd < 0 { return }
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            Socket.setNoDelay(fd)
            do {
                let connection = try ServerConnection(loop: loop, fd: fd, id: nextID, tls: tls, handler: self.tracking, maximumStreams: maximumStreams)
                nextID += 1
                connections[ObjectIdentifier(connection)] = connection
                loop.add(connection)
            } catch {
                Glibc.close(fd)
            }
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

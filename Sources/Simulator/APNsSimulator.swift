#if canImport(Glibc)
import Glibc
#endif
import Crypto
import HTTP2

/// The APNs simulator: a device-push port and a channel-management port on one loop thread,
/// with its own CA. Used by `sokuho simulator`, the tests, the demo and `sokuho bench`.
public final class APNsSimulator: Sendable {
    public let configuration: SimulatorConfiguration
    public let certificates: SimulatorCertificates
    private let loop: EventLoop
    private let pushServer: HTTP2Server
    private let manageServer: HTTP2Server
    private let handler: SimulatorHandler
    private let thread: OSThread
    private let log: PushLog?

    /// Starts listening. `certificates` come from `SimulatorCertificates.prepare(directory:)`.
    public init(configuration: SimulatorConfiguration, certificates: SimulatorCertificates) throws(SimulatorError) {
        self.configuration = configuration
        self.certificates = certificates
        log = try configuration.logPath.map { (path: String) throws(SimulatorError) in try PushLog(path: path) }
        let handler = SimulatorHandler(configuration: configuration, log: log)
        self.handler = handler
        let loop = EventLoop(name: "sokuho-simulator")
        self.loop = loop
        let tls: TLSConfiguration
        do {
            tls = try TLSConfiguration.server(certificateFile: certificates.certificate, keyFile: certificates.key)
        } catch {
            throw .certificates(error.description)
        }
        let initialStreams = configuration.oneStreamUntilFirstPush ? 1 : configuration.maximumStreams
        do {
            pushServer = try HTTP2Server(loop: loop, host: configuration.host, port: configuration.port, tls: tls,
                                         handler: PortHandler(inner: handler, management: false), maximumStreams: initialStreams)
            manageServer = try HTTP2Server(loop: loop, host: configuration.host, port: configuration.managePort, tls: tls,
                                           handler: PortHandler(inner: handler, management: true), maximumStreams: 100)
        } catch {
            throw .listen(error.description)
        }
        let push = pushServer, manage = manageServer
        loop.execute { push.start(); manage.start() }
        thread = loop.start()
    }

    /// The device push / broadcast port.
    public var port: Int { pushServer.port }
    /// The channel-management port.
    public var managePort: Int { manageServer.port }

    /// What the simulator has seen so far.
    public var counters: SimulatorCounters { handler.counters.withLock { $0 } }

    /// Stops listening, drops every connection and ends the loop thread.
    public func stop() {
        let push = pushServer, manage = manageServer
        loop.execute { push.stop(); manage.stop() }
        loop.stop()
        thread.join()
        log?.close()
    }
}

/// Marks the connections of one port (device push or management) before handing them on.
private final class PortHandler: HTTP2RequestHandler, @unchecked Sendable {
    // @unchecked: used on the simulator loop thread only.
    let inner: SimulatorHandler
    let management: Bool
    init(inner: SimulatorHandler, management: Bool) { self.inner = inner; self.management = management }
    func handle(_ request: ServerRequest, on connection: ServerConnection) { inner.handle(request, on: connection) }
    func connectionOpened(_ connection: ServerConnection) {
        if management { inner.managementConnections.insert(ObjectIdentifier(connection)) }
        inner.connectionOpened(connection)
    }
    func connectionClosed(_ connection: ServerConnection) { inner.connectionClosed(connection) }
    func responseSent(_ response: ServerResponse, on connection: ServerConnection) { inner.responseSent(response, on: connection) }
}

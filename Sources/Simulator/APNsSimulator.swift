#if canImport(Glibc)
import Glibc
#endif
import Crypto
import FCM
import HTTP2
import IO
import Synchronization

/// The APNs simulator: a device-push port served by one or more loop threads and a channel-management port,
/// with its own CA. Used by `sokuho simulator`, the tests, the demo and `sokuho bench`. The push port
/// plays FCM HTTP v1 too (its token endpoint and sends, told apart by path), with a service account
/// written into the certificate directory (`fcmServiceAccountFile`).
public final class APNsSimulator: Sendable {
    public let configuration: SimulatorConfiguration
    public let certificates: SimulatorCertificates
    private let loops: [EventLoop]
    /// One device-push listener per loop thread, all on one port (SO_REUSEPORT).
    private let pushServers: [HTTP2Server]
    /// Channel management is light: one listener, on the first loop.
    private let manageServer: HTTP2Server
    private let shared: SimulatorShared
    private let threads: [OSThread]
    private let stopped = Atomic<Bool>(false)
    /// The service account FCM clients use, `token_uri` pointing at this simulator.
    public let fcmServiceAccount: ServiceAccount
    /// Where it was written, in Google's layout.
    public let fcmServiceAccountFile: String

    /// Starts listening. `certificates` come from `SimulatorCertificates.prepare(directory:)`.
    public init(configuration: SimulatorConfiguration, certificates: SimulatorCertificates) throws(SimulatorError) {
        self.configuration = configuration
        self.certificates = certificates
        let log = try configuration.logPath.map { (path: String) throws(SimulatorError) in try PushLog(path: path) }
        let fcm = FCMSimulatorState(projectID: SimulatorCertificates.fcmProjectID, quotaPerMinute: configuration.fcmQuotaPerMinute)
        let shared = SimulatorShared(log: log, fcm: fcm)
        self.shared = shared
        let tls: TLSConfiguration
        do {
            tls = try TLSConfiguration.server(certificateFile: certificates.certificate, keyFile: certificates.key)
        } catch {
            throw .certificates(error.description)
        }
        let initialStreams = configuration.oneStreamUntilFirstPush ? 1 : configuration.maximumStreams
        let count = max(1, configuration.threads)
        var loops: [EventLoop] = []
        var pushServers: [HTTP2Server] = []
        var manageServer: HTTP2Server?
        do {
            var port = configuration.port
            for index in 0..<count {
                let loop = try EventLoop(name: "sokuho-sim-\(index)")
                let handler = SimulatorHandler(configuration: configuration, shared: shared)
                let server = try HTTP2Server(loop: loop, host: configuration.host, port: port, tls: tls,
                                             handler: PortHandler(inner: handler, management: false),
                                             maximumStreams: initialStreams, reusePort: count > 1)
                port = server.port  // the others join the port the first one got
                if index == 0 {
                    manageServer = try HTTP2Server(loop: loop, host: configuration.host, port: configuration.managePort, tls: tls,
                                                   handler: PortHandler(inner: handler, management: true), maximumStreams: 100)
                }
                loops.append(loop)
                pushServers.append(server)
            }
        } catch {
            throw .listen(error.description)
        }
        // Before the loops run: the token endpoint checks `aud` against a URI naming the port.
        let (account, key) = try certificates.fcmAccount(host: configuration.host, port: pushServers[0].port)
        fcm.setTokenRules(FCMTokenRules(privateKeyID: account.privateKeyID, clientEmail: account.clientEmail,
                                        tokenURI: account.tokenURI, key: key.verifyingKey))
        fcmServiceAccount = account
        fcmServiceAccountFile = try certificates.writeFCMServiceAccount(account, port: pushServers[0].port)
        self.loops = loops
        self.pushServers = pushServers
        self.manageServer = manageServer!
        let manage = manageServer!
        loops[0].execute { manage.start() }
        for (loop, server) in zip(loops, pushServers) { loop.execute { server.start() } }
        threads = loops.map { $0.start() }
    }

    /// The device push / broadcast port.
    public var port: Int { pushServers[0].port }
    /// The channel-management port.
    public var managePort: Int { manageServer.port }

    /// What the simulator has seen so far.
    public var counters: SimulatorCounters { shared.counters.withLock { $0 } }

    /// Pushes accepted so far, without copying the counters' per-token table: cheap enough to poll
    /// in a loop (`sokuho bench serve` spins on it to see a first push arrive).
    public var acceptedCount: Int { shared.counters.withLock { $0.accepted } }

    /// Forgets every FCM access token granted so far: the next send with one is 401 UNAUTHENTICATED,
    /// as when a token expires mid-event (without a test waiting for it).
    public func expireFCMAccessTokens() { shared.fcm.expireAll() }

    /// The FCM service account's key is deleted mid-event: the tokens granted so far are refused
    /// (401) and the token endpoint answers `invalid_grant` "Invalid JWT Signature.".
    public func revokeFCMServiceAccount() { shared.fcm.revoke() }

    /// Stops listening, drops every connection and ends the loop threads.
    /// Stops serving and joins the loop threads. Safe to call more than once (a test may stop the
    /// server mid-run and again when it cleans up); only the first call does anything.
    public func stop() {
        guard !stopped.exchange(true, ordering: .acquiringAndReleasing) else { return }
        let manage = manageServer
        loops[0].execute { manage.stop() }
        for (loop, server) in zip(loops, pushServers) { loop.execute { server.stop() } }
        for loop in loops { loop.stop() }
        for thread in threads { thread.join() }
        shared.log?.close()
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
        if management {
            inner.managementConnections.insert(ObjectIdentifier(connection))
            let open = inner.managementConnections.count
            inner.shared.counters.withLock {
                $0.managementConnections += 1
                $0.managementConnectionsPeak = max($0.managementConnectionsPeak, open)
            }
        }
        inner.connectionOpened(connection)
    }
    func connectionClosed(_ connection: ServerConnection) { inner.connectionClosed(connection) }
    func responseSent(_ response: ServerResponse, on connection: ServerConnection) { inner.responseSent(response, on: connection) }
}

import APNs
import Crypto
import Fanout
import HTTP2
import Sender
import Synchronization

/// One configured app and environment at run time: its warm connection pool (open between
/// events, PINGed every keep-alive so NATs keep it), its provider tokens, and the fan-out options
/// every event of this app runs with.
final class AppRuntime: Sendable {
    let app: ServeConfiguration.App
    let pool: ConnectionPool
    let fanout: FanoutOptions
    let tokens: ProviderTokenSource
    /// Channel management on the channel host (the API's `/v1/channels`, the credential check).
    let channels: ChannelClient
    /// The last credential check's result; nil before the first.
    let credentialCheck = Mutex<CredentialCheck?>(nil)

    init(app: ServeConfiguration.App, configuration: ServeConfiguration) throws(ServiceError) {
        self.app = app
        let tls: TLSConfiguration
        do { tls = try TLSConfiguration.client(caFile: app.caFile) } catch {
            throw ServiceError("apps \(app.bundleID.text) (\(app.environment.rawValue)): caFile: \(error.description)")
        }
        do {
            let key = try SigningKey(contentsOf: app.keyFile)
            tokens = ProviderTokenSource(signer: try ProviderTokenSigner(key: key, keyID: app.keyID, teamID: app.teamID))
        } catch {
            throw ServiceError("apps \(app.bundleID.text) (\(app.environment.rawValue)): keyFile \(app.keyFile): \(error.description)")
        }
        let push = app.host ?? app.environment.devicePush
        let manage = app.manageHost ?? app.environment.channelManagement
        var pool = PoolConfiguration(host: push.host, port: push.port, tls: tls)
        pool.providerTokens = tokens
        pool.connections = app.connections
        pool.streamsPerConnection = app.streams
        pool.keepWarm = true
        pool.keepalive = configuration.keepalive
        // A daemon outlives outages: an unreachable APNs at boot (a Pi whose network comes up
        // late) is retried with back-off, never a permanent halt; events wait until their deadlines.
        pool.failFastAfterAttempts = .max
        self.pool = ConnectionPool(configuration: pool)
        var options = FanoutOptions(pool: pool, push: ClientConnectionOptions(host: push.host, port: push.port, tls: tls),
                                    manage: ClientConnectionOptions(host: manage.host, port: manage.port, tls: tls))
        options.sharedPool = self.pool
        options.startLimit = configuration.startLimit
        options.startWindow = configuration.startWindow
        fanout = options
        channels = ChannelClient(bundle: app.bundleID, push: options.push, manage: options.manage, tokens: tokens, timeout: .seconds(30))
    }

    /// "com.example.eew/production": how metrics, the status page and messages name it.
    var name: String { "\(app.bundleID.text)/\(app.environment.rawValue)" }

    func shutdown() { pool.shutdown() }
}

/// The daemon could not start (or reload) with this configuration; the message names what.
public struct ServiceError: Error, Sendable, CustomStringConvertible {
    public let message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

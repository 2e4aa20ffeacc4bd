import Cluster
import DaemonConfiguration
import APNs
import Crypto
import FCM
import Fanout
import Sender
import Vocabulary

/// One configured app and environment at run time: its warm connection pool (open between
/// events, PINGed every keep-alive so NATs keep it), its provider tokens, and the fan-out options
/// every event of this app runs with.
package final class AppRuntime: Sendable {
    package let app: ServeConfiguration.App
    package let pool: ConnectionPool
    package let tokens: ProviderTokenSource
    /// Channel management on the channel host, on one kept connection (the API's `/v1/channels`,
    /// the credential check, every `"channel":"auto"` event of this app).
    package let channels: ChannelClient
    /// The app's Android side: its warm FCM pool and the service account's access tokens; nil
    /// without an `android` member.
    package let android: AndroidRuntime?
    /// The last credential check's result; nil before the first.
    package let credentialCheck = Lock<CredentialCheck?>(nil)
    /// The public half of the key the pool signs with: a reload that names another file holding
    /// the same key keeps the connections.
    private let publicKey: [UInt8]
    private let keepalive: Duration
    /// The options every event of this app runs with; a reload may change the start budget.
    private let options: Lock<FanoutOptions>

    package init(app: ServeConfiguration.App, configuration: ServeConfiguration) throws(ServiceError) {
        self.app = app
        let tls: TLSConfiguration
        do { tls = try TLSConfiguration.client(caFile: app.caFile) } catch {
            throw ServiceError("apps \(app.bundleID.text) (\(app.environment.rawValue)): caFile: \(error.description)")
        }
        let key: SigningKey
        do {
            key = try SigningKey(contentsOf: app.keyFile)
            tokens = ProviderTokenSource(signer: try ProviderTokenSigner(key: key, keyID: app.keyID, teamID: app.teamID))
        } catch {
            throw ServiceError("apps \(app.bundleID.text) (\(app.environment.rawValue)): keyFile \(app.keyFile): \(error.description)")
        }
        publicKey = key.publicKeyDER
        keepalive = configuration.keepalive
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
        do { self.pool = try ConnectionPool(configuration: pool) } catch {
            throw ServiceError("apps \(app.bundleID.text) (\(app.environment.rawValue)): cannot start its connection pool: \(error)")
        }
        var options = FanoutOptions(pool: pool, manage: ProviderEndpoint(host: manage.host, port: manage.port, tls: tls))
        options.sharedPool = self.pool
        options.startLimit = configuration.startLimit
        options.startWindow = configuration.startWindow
        channels = ChannelClient(bundle: app.bundleID, manage: options.manage, tokens: tokens, timeout: .seconds(30),
                                 keepalive: configuration.keepalive)
        options.channels = channels
        do throws(ServiceError) {
            android = try app.android.map { (android) throws(ServiceError) in try AndroidRuntime(android, keepalive: configuration.keepalive) }
        } catch {
            self.pool.shutdown()
            channels.shutdown()
            throw ServiceError("apps \(app.bundleID.text) (\(app.environment.rawValue)): android: \(error.message)")
        }
        if let android { options.android = FCMLane(pool: android.configuration, sharedPool: android.pool) }
        self.options = Lock(options)
    }

    package var fanout: FanoutOptions { options.withLock { $0 } }

    /// "com.example.eew/production": how metrics, the status page and messages name it.
    package var name: String { "\(app.bundleID.text)/\(app.environment.rawValue)" }

    /// Whether a reloaded configuration can keep this runtime and its warm connections: the same
    /// endpoints, CA, pool sizes, keep-alive, ids and key (by its public half, so a key file moved
    /// or rewritten with the same key keeps them). A CA file rewritten in place is not noticed:
    /// that one takes a restart.
    package func canKeep(_ other: ServeConfiguration.App, configuration: ServeConfiguration) -> Bool {
        var mine = app, theirs = other
        mine.keyFile = ""; theirs.keyFile = ""
        guard mine == theirs, keepalive == configuration.keepalive else { return false }
        guard let key = try? SigningKey(contentsOf: other.keyFile) else { return false }
        // The service account is read again: a rewritten file (a rotated key) takes new connections.
        if let android, let theirs = other.android, (try? ConfigurationCheck.serviceAccount(theirs.serviceAccountFile, field: "")) != android.account {
            return false
        }
        return key.publicKeyDER == publicKey
    }

    /// Settings a kept runtime takes from a reload: the start budget of later events.
    package func apply(_ configuration: ServeConfiguration) {
        options.withLock {
            $0.startLimit = configuration.startLimit
            $0.startWindow = configuration.startWindow
        }
    }

    package func shutdown() {
        channels.shutdown()
        pool.shutdown()
        android?.pool.shutdown()
    }
}

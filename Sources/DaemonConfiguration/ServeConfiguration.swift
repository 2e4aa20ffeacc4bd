import APNs

/// Everything `sokuho serve` needs before it starts: the apps it pushes for, where it listens, where
/// its store is, and its timers and limits. Read from one JSON file, then flags and `SOKUHO_*`
/// variables on top (`ServeSetting.all` is the table), and checked whole at start so a mistake
/// fails with the field's name instead of as a refusal hours later.
///
/// "No value" is an optional, never 0 or an empty string.
public struct ServeConfiguration: Sendable {
    /// One app's provider credentials and its connection pool. Apps are told apart by their
    /// (bundle ID, environment) pair: the same app's sandbox and production pools are two entries.
    public struct App: Sendable, Equatable {
        public var bundleID: BundleID
        /// The 10-character Team ID the key belongs to.
        public var teamID: String
        /// The 10-character Key ID (the part after `AuthKey_` in the .p8 file name).
        public var keyID: String
        /// The path of the ES256 `.p8` key; only the path is kept here, never the key material.
        public var keyFile: String
        /// No default: pushing to the wrong environment answers `BadDeviceToken` for every phone.
        public var environment: Environment
        public var connections: Int
        public var streams: Int
        /// The push host instead of Apple's (the simulator's), or nil for the environment's.
        public var host: Endpoint?
        /// The channel-management host instead of Apple's, or nil for the environment's.
        public var manageHost: Endpoint?
        /// A CA to trust instead of the system bundle (the simulator's `ca.pem`), or nil.
        public var caFile: String?
        /// The app's Android phones through FCM, or nil: its events reach iOS phones only.
        public var android: AndroidApp?

        public init(bundleID: BundleID, teamID: String, keyID: String, keyFile: String, environment: Environment,
                    connections: Int = App.defaultConnections, streams: Int = App.defaultStreams,
                    host: Endpoint? = nil, manageHost: Endpoint? = nil, caFile: String? = nil, android: AndroidApp? = nil) {
            self.android = android
            self.bundleID = bundleID
            self.teamID = teamID
            self.keyID = keyID
            self.keyFile = keyFile
            self.environment = environment
            self.connections = connections
            self.streams = streams
            self.host = host
            self.manageHost = manageHost
            self.caFile = caFile
        }

        /// The pool sizes `sokuho fanout` uses by default.
        public static let defaultConnections = 4
        public static let defaultStreams = 1000
        public static let connectionsRange = 1...256
        public static let streamsRange = 1...100_000
    }

    /// A token bucket per client address: `perSecond` requests refill it, `burst` is its size.
    public struct RateLimit: Sendable, Equatable {
        public var perSecond: Int
        public var burst: Int

        public init(perSecond: Int, burst: Int) {
            self.perSecond = perSecond
            self.burst = burst
        }
    }

    public var apps: [App] = []
    /// Loopback by default: the API submits events that reach every phone, so exposing it beyond
    /// this machine (or a reverse proxy on it) is a decision to make, not a default to inherit.
    public var listen: [Endpoint] = [Endpoint(host: "127.0.0.1", port: 8080)]
    /// The token store's directory (absolute: a daemon's working directory is not the operator's).
    public var storePath: String = "/var/lib/sokuho"
    /// The file holding the API's admin bearer token. Required: the API never runs open.
    public var adminTokenFile: String = ""
    /// How often an idle APNs connection sends an HTTP/2 PING, so NATs and load balancers that drop
    /// idle TCP flows (often after 5–15 minutes) do not silently cut it.
    public var keepalive: Duration = .seconds(300)
    /// How often each app's key and ids are checked against APNs while nothing is sent, so a
    /// revoked key is reported before the next earthquake, not during it.
    public var credentialCheckInterval: Duration = .seconds(3600)
    /// The push-to-start budget per phone (as `sokuho fanout --start-limit`): nil means no limit.
    public var startLimit: Int? = 8
    /// The window of the start budget (as `sokuho fanout --start-window`).
    public var startWindow: Duration = .seconds(3600)
    /// Requests per client address to the API, or nil for no limit.
    public var rateLimit: RateLimit? = RateLimit(perSecond: 20, burst: 40)
    /// The largest request body the API reads; larger requests are refused before they are read.
    public var maxBodyBytes: Int = 1 << 20
    public var statusPage: Bool = true
    /// How the log lines on stderr are written: text for people, JSON lines for log shippers.
    public var logFormat: LogFormat = .text
    /// Accept a `.p8` key or admin token file that group or others can read. Off by default: either
    /// file lets whoever reads it push to every phone.
    public var allowReadableKey: Bool = false
    /// A warm standby: pools connected and PINGed, credentials checked, nothing sent (events and
    /// registrations answer 503 `standby`) until promoted.
    public var standby: Bool = false
    /// Where the primary's backup timer ships its latest backup: a standby applies it to its own
    /// store whenever it changes. Nil: the standby's store is only what it was started with.
    public var standbyBackupFile: String?
    /// Several nodes through Valkey/Redis (`ClusterReading.swift`); nil: this node alone.
    public var cluster: Cluster?

    /// The defaults; `load` fills in the rest.
    public init() {}
}

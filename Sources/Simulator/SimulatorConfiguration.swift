import Crypto

/// How the simulator behaves: where it listens, whom it trusts, and which faults it injects.
public struct SimulatorConfiguration: Sendable {
    public var host = "127.0.0.1"
    /// Device push and broadcast port (0: any free port).
    public var port = 0
    /// Channel-management port (0: any free port).
    public var managePort = 0
    /// Loop threads serving device pushes (each with its own listener on the same port).
    public var threads = 1
    /// Provider keys whose ES256 tokens are accepted.
    public var trustedKeys: [ProviderTokenVerifier.TrustedKey] = []
    /// Bundle IDs the trusted team may push to; empty accepts any.
    public var bundles: Set<String> = []
    /// Answer every push this much later.
    public var latency: Duration = .zero
    /// This fraction of answers comes `slowDelay` late instead (a fault run's responses slower
    /// than the sender's deadline).
    public var slowFraction = 0.0
    public var slowDelay: Duration = .zero
    /// Reasons answered for a random fraction of otherwise valid pushes, e.g. ("InternalServerError", 0.01).
    public var faults: [(reason: String, fraction: Double)] = []
    /// Every this many device-push requests (counted over all connections), send GOAWAY naming that
    /// request's stream on its connection (0: never).
    public var goAwayAfter = 0
    /// The reason put in the `goAwayAfter` GOAWAY's debug data as `{"reason":"…"}` (JSON-escaped),
    /// the way APNs explains a GOAWAY; nil sends the GOAWAY without debug data.
    public var goAwayReason: String?
    /// Every this many device-push requests (counted over all connections), drop that request's
    /// connection without GOAWAY: answers already sent are kept, that request and everything after
    /// it on the connection are never answered (0: never).
    public var resetAfter = 0
    /// The connection that takes this device-push request (counted over all connections, like
    /// `goAwayAfter`; once, not every Nth) goes silent: that request and every later one on it get no
    /// answer, and it sends nothing more — no PING or SETTINGS ACKs, no WINDOW_UPDATE — while the TCP
    /// connection stays open until the client closes it. Other connections are unaffected (0: never).
    public var stallAfter = 0
    /// `Retry-After` (seconds) on every 429 and 503 answer. Whether APNs sends one is not documented
    /// (APNS.md §11, open question 6): tests run the sender with it and without it (nil).
    public var retryAfterSeconds: Int?
    /// Where TooManyProviderTokenUpdates is counted (see `ProviderTokenScope`).
    public var tokenScope = ProviderTokenScope.connection
    /// SETTINGS_MAX_CONCURRENT_STREAMS once a connection's first push was accepted.
    public var maximumStreams: UInt32 = 1000
    /// Like APNs with token auth: one stream until the first accepted push.
    public var oneStreamUntilFirstPush = true
    /// Tokens (lowercase hex) that answer 410 Unregistered.
    public var unregisteredTokens: Set<String> = []
    /// Where to append one JSON line per accepted push (nil: no log).
    public var logPath: String?
    /// Whether to keep a count per accepted token (tests assert on duplicates).
    public var trackTokens = false
    /// Random seed for fault injection (0: from the system).
    public var seed: UInt64 = 0
    /// Whether responses carry `apns-unique-id` (APNs sends it in the development environment).
    public var sendsUniqueID = true

    // MARK: FCM (same port, told apart by path; see `FCMSimulatorHandler`)

    /// `expires_in` of the access tokens `/token` grants (Google: 3599 s); short in tests that
    /// make a token run out mid-event.
    public var fcmAccessTokenLifetime: Duration = .seconds(3599)
    /// Registration tokens that answer 404 UNREGISTERED (as `unregisteredTokens` do 410 on APNs).
    public var fcmUnregisteredTokens: Set<String> = []
    /// Registration tokens of another project: 403 SENDER_ID_MISMATCH.
    public var fcmForeignTokens: Set<String> = []
    /// The project's quota, messages per minute over a sliding window (FCM.md: 600,000).
    public var fcmQuotaPerMinute = 600_000
    /// FCM errors answered for a random fraction of otherwise valid sends, by name
    /// (`UNAVAILABLE`, `INTERNAL`, `QUOTA_EXCEEDED`, … see `FCMRefusal.injectableNames`).
    public var fcmFaults: [(name: String, fraction: Double)] = []
    /// The names `fcmFaults` takes.
    public static var fcmFaultNames: [String] { FCMRefusal.injectableNames }
    /// SETTINGS_MAX_CONCURRENT_STREAMS a connection gets on its first FCM request (Google's
    /// commonly seen 100). Until then it has what APNs' rules give every new connection (one
    /// stream with `oneStreamUntilFirstPush`): the port is shared, and a connection says which
    /// service it speaks only with its first request. APNs' behaviour is unchanged.
    public var fcmMaximumStreams: UInt32 = 100

    public init() {}
}

/// Where the simulator counts provider-token changes for the 20-minute rule (TooManyProviderTokenUpdates).
public enum ProviderTokenScope: String, Sendable, CaseIterable {
    /// Per connection: a connection may not switch to another token within 20 minutes of starting
    /// to use its current one.
    case connection
    /// Per (team, key ID), over every connection of the simulator: the first token seen for a key
    /// is free, a new token is a change, and a change within 20 minutes of the previous change is
    /// refused — what several sender processes that each sign their own token run into.
    case key
}

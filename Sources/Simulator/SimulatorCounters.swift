/// What the simulator has seen, for tests, benchmarks and its exit summary.
public struct SimulatorCounters: Sendable, Equatable {
    /// Pushes answered 200 (device and broadcast), counted when the answer is actually sent.
    public var accepted = 0
    /// Refusals by reason name.
    public var rejected: [String: Int] = [:]
    public var channelRequests = 0
    public var connections = 0
    /// Connections to the channel-management port: opened in all, and open at once at most (a
    /// client keeps one per app; a pool per call showed as one per request).
    public var managementConnections = 0
    public var managementConnectionsPeak = 0
    public var goAwaysSent = 0
    public var connectionsDropped = 0
    /// Connections silenced by `stallAfter`.
    public var connectionsStalled = 0
    /// Answers the slow fault held back (each sent `slowDelay` late, or never if the connection
    /// closed first): a fault run's pushes that may rightly end unknown or expired.
    public var answersHeldBack = 0
    /// Accepted pushes per token (only with `trackTokens`).
    public var acceptedPerToken: [String: Int] = [:]
    /// FCM messages answered 200 (dry runs with `validate_only` not counted), counted when the
    /// answer is sent, like `accepted`.
    public var fcmAccepted = 0
    /// FCM refusals by FcmError code, else status name (`UNREGISTERED`, `UNAUTHENTICATED`, …).
    public var fcmRejected: [String: Int] = [:]
    /// Access tokens granted by `/token`, and assertions refused by OAuth error (`invalid_grant`).
    public var fcmTokensGranted = 0
    public var fcmTokensRefused: [String: Int] = [:]
    /// Accepted FCM messages per registration token (only with `trackTokens`).
    public var fcmAcceptedPerToken: [String: Int] = [:]

    public init() {}

    public var rejectedTotal: Int { rejected.values.reduce(0, +) }
}

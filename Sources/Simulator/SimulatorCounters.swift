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
    /// Accepted pushes per token (only with `trackTokens`).
    public var acceptedPerToken: [String: Int] = [:]

    public init() {}

    public var rejectedTotal: Int { rejected.values.reduce(0, +) }
}

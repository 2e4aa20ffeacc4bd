/// The one final outcome of every push (DESIGN.md §4). Nothing is lost and nothing silently doubled:
/// each submitted push ends in exactly one of these.
public enum PushOutcome: Int, Sendable, CaseIterable, CustomStringConvertible {
    /// 2xx on the first attempt.
    case delivered
    /// 2xx after one or more back-off retries or resends.
    case deliveredAfterRetry
    /// The token is dead (410, BadDeviceToken, DeviceTokenNotForTopic): prune it.
    case tokenDead
    /// Retries ran out (or the deadline passed between them) on a transient error.
    case failedAfterRetry
    /// A bug in the request (other 4xx): never resent unchanged.
    case requestBug
    /// Credentials, configuration or connection failure: the pool stopped sending.
    case authOrConnectionFailure
    /// In flight on a connection that died without a GOAWAY covering it, and not resent by policy.
    case unknown
    /// The group's deadline passed before it could be delivered; it was not sent (again).
    case expired

    public var description: String {
        switch self {
        case .delivered: return "delivered"
        case .deliveredAfterRetry: return "deliveredAfterRetry"
        case .tokenDead: return "tokenDead"
        case .failedAfterRetry: return "failedAfterRetry"
        case .requestBug: return "requestBug"
        case .authOrConnectionFailure: return "authOrConnectionFailure"
        case .unknown: return "unknown"
        case .expired: return "expired"
        }
    }
}

/// Counts kept per loop thread (no shared counter per push) and summed on demand.
public struct SenderCounters: Sendable, Equatable {
    public var outcomes = [Int](repeating: 0, count: PushOutcome.allCases.count)
    /// Back-off retries after 429/5xx.
    public var retries = 0
    /// Provably unprocessed pushes sent again at once (REFUSED_STREAM, above GOAWAY, never sent).
    public var refusedResends = 0
    /// Pushes of unknown outcome sent again because their group allows it (may be duplicates).
    public var unknownResends = 0
    public var connectionsOpened = 0
    public var connectionFailures = 0
    public var goAways = 0

    public init() {}

    public subscript(outcome: PushOutcome) -> Int {
        get { outcomes[outcome.rawValue] }
        set { outcomes[outcome.rawValue] = newValue }
    }

    public var finished: Int { outcomes.reduce(0, +) }

    public static func + (lhs: SenderCounters, rhs: SenderCounters) -> SenderCounters {
        var sum = lhs
        for index in sum.outcomes.indices { sum.outcomes[index] += rhs.outcomes[index] }
        sum.retries += rhs.retries
        sum.refusedResends += rhs.refusedResends
        sum.unknownResends += rhs.unknownResends
        sum.connectionsOpened += rhs.connectionsOpened
        sum.connectionFailures += rhs.connectionFailures
        sum.goAways += rhs.goAways
        return sum
    }
}

/// How much a daemon log line matters to the operator: `info` says what happened, `warning` what
/// may need them (an event stopped early, a cluster degraded), `error` what does (a credential check
/// failing, a pool halted, an event failed). The Cluster module tells its lines' levels with it.
public enum LogLevel: String, Sendable, Comparable {
    case info, warning, error

    public static func < (lhs: LogLevel, rhs: LogLevel) -> Bool { lhs.rank < rhs.rank }

    private var rank: Int {
        switch self {
        case .info: 0
        case .warning: 1
        case .error: 2
        }
    }
}

/// Why a run stopped before every target had its outcome. A value, so a caller decides by case
/// (`sokuho fanout` exits 78 for the circuit breaker, 69 otherwise) and never by the wording;
/// `text` is the wording, exactly what reports have always said in `stopped` (users and scripts
/// read it there, and stored reports keep it).
public enum StopReason: Sendable, Equatable {
    /// Too many of a group's first answers were BadDeviceToken or DeviceTokenNotForTopic: a wrong
    /// environment or topic, not dead phones (`FanoutSink.breakerSample`).
    case circuitBreaker(group: String, bad: Int, answers: Int)
    /// The pool stopped sending (credentials refused, the host unreachable): its own message.
    case poolHalted(String)
    /// The cluster shard's lease is gone, or a later holder fenced this node out: another node
    /// resumes the shard from its checkpoint.
    case leaseLost(String)
    /// A checkpoint could not be recorded where the run's journal keeps it (a cluster's Redis).
    case checkpointFailed(String)
    /// An end was sent, but deleting its auto channels failed (one line per channel).
    case channelCleanup(problems: [String])
    /// A later serial of the same key arrived: this run hands out nothing more, its answers are
    /// settled and checkpointed, and the later serial starts the phones it had not reached. Not
    /// a stop in the report (`supersededBy` instead): the event ends done, not to be resumed.
    case superseded(by: UInt32)

    /// The report's `stopped` text.
    public var text: String {
        switch self {
        case let .circuitBreaker(group, bad, answers):
            return "circuit breaker: \(bad) of the first \(answers) answers for group '\(group)' were BadDeviceToken or DeviceTokenNotForTopic; that is a wrong environment or topic, not dead phones, so the event stopped and nothing was pruned"
        case let .poolHalted(message), let .leaseLost(message), let .checkpointFailed(message):
            return message
        case let .channelCleanup(problems):
            return "the end was sent, but deleting channels failed: " + problems.joined(separator: "; ")
        case let .superseded(newer):
            return "superseded by serial \(newer), which starts the phones this serial had not reached"
        }
    }
}

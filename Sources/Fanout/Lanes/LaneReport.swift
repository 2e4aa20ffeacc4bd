import JSONCore

/// One lane's share of an event's report: the same counters in every lane, each meaning what the
/// report's total of that name means, so the totals are the lanes' sums (`FanoutReport`). Every
/// phone of a lane the event reached ends in exactly one of its targets' outcomes or the counts
/// of phones not sent to.
public struct LaneReport: Sendable, Equatable {
    public var delivered = 0
    /// Answers saying the token is dead (the report's `pruned` has them by reason).
    public var pruned = 0
    /// Refused for good (the report's `failed` has them by reason).
    public var failed = 0
    public var unknown = 0
    public var expired = 0
    public var answeredBeforeRestart = 0
    public var duplicatesAvoided = 0
    public var skippedByBudget = 0
    public var resentAfterUnknown = 0
    public var resentAfterBackOff = 0
    /// Phones of this lane not sent to: the app has no member for the lane, the lane stopped (its
    /// breaker, refused credentials), or their group's message is more than the lane carries.
    public var skipped = 0
    /// Bad-token answers the lane's circuit breaker kept from pruning.
    public var pruneWithheld = 0
    /// Tokens of this lane removed from the store.
    public var tokensRemoved = 0
    /// Why this lane stopped while the event went on, if it did.
    public var stopped: String?

    public init() {}

    /// Pushes handed to the lane's provider that ended, or were in doubt or past the deadline.
    public var targets: Int { delivered + pruned + failed + unknown + expired }

    /// The counters in report order, by name (JSON and the text report share them).
    public var counts: [(String, Int)] {
        [("targets", targets), ("delivered", delivered), ("pruned", pruned), ("failed", failed), ("unknown", unknown), ("expired", expired),
         ("answeredBeforeRestart", answeredBeforeRestart), ("duplicatesAvoided", duplicatesAvoided), ("skippedByBudget", skippedByBudget),
         ("resentAfterUnknown", resentAfterUnknown), ("resentAfterBackOff", resentAfterBackOff), ("skipped", skipped),
         ("pruneWithheld", pruneWithheld), ("tokensRemoved", tokensRemoved)]
    }

    public func adding(_ other: LaneReport) -> LaneReport {
        var sum = self
        sum.delivered += other.delivered; sum.pruned += other.pruned; sum.failed += other.failed
        sum.unknown += other.unknown; sum.expired += other.expired
        sum.answeredBeforeRestart += other.answeredBeforeRestart; sum.duplicatesAvoided += other.duplicatesAvoided
        sum.skippedByBudget += other.skippedByBudget; sum.resentAfterUnknown += other.resentAfterUnknown
        sum.resentAfterBackOff += other.resentAfterBackOff; sum.skipped += other.skipped
        sum.pruneWithheld += other.pruneWithheld; sum.tokensRemoved += other.tokensRemoved
        sum.stopped = stopped ?? other.stopped
        return sum
    }

    func write(to writer: inout JSONWriter) {
        writer.beginObject()
        for (name, value) in counts { writer.key(name); writer.int(value) }
        writer.key("stopped"); if let stopped { writer.string(stopped) } else { writer.null() }
        writer.endObject()
    }

    /// Reads a lane back from its JSON object (`targets` is derived, not read).
    init(json value: JSONValue) {
        func int(_ key: String) -> Int { Int(value[key]?.int64Value ?? 0) }
        delivered = int("delivered"); pruned = int("pruned"); failed = int("failed"); unknown = int("unknown"); expired = int("expired")
        answeredBeforeRestart = int("answeredBeforeRestart"); duplicatesAvoided = int("duplicatesAvoided")
        skippedByBudget = int("skippedByBudget"); resentAfterUnknown = int("resentAfterUnknown")
        resentAfterBackOff = int("resentAfterBackOff"); skipped = int("skipped")
        pruneWithheld = int("pruneWithheld"); tokensRemoved = int("tokensRemoved")
        stopped = value["stopped"]?.stringValue
    }
}

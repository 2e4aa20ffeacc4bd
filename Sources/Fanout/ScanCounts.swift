/// What a pass of the scan counts itself for one lane — targets it handled without a push, and
/// resends after an unknown — on the scanning thread, added to the report once per pass
/// (`FanoutSink.add`, a `PerLane` of them): no lock per target.
struct ScanCounts {
    /// Not sent: an earlier run's answers and unknowns, this event's duplicates, the start budget, the deadline.
    var answeredBeforeRestart = 0, unknown = 0, duplicatesAvoided = 0, skippedByBudget = 0, expired = 0
    /// Sent again after an unknown outcome (`onUnknown: resend`).
    var resentAfterUnknown = 0
    /// Sent again because the earlier run held them off the wire for a back-off resend.
    var resentAfterBackOff = 0
    /// Phones not sent to: no lane for the app (no `android` member), the lane stopped (its
    /// breaker, its halted pool), or their group's message is more than the lane carries.
    var skipped = 0
}

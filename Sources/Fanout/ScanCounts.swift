/// What a pass of the scan counts itself — targets it handled without a push, and resends after
/// an unknown — on the scanning thread, added to the report once per pass (`FanoutSink.add`): no
/// lock per target.
struct ScanCounts {
    /// Not sent: an earlier run's answers and unknowns, this event's duplicates, the start budget, the deadline.
    var answeredBeforeRestart = 0, unknown = 0, duplicatesAvoided = 0, skippedByBudget = 0, expired = 0
    /// Sent again after an unknown outcome (`onUnknown: resend`).
    var resentAfterUnknown = 0
    /// Sent again because the earlier run held them off the wire for a back-off resend.
    var resentAfterBackOff = 0
    /// Android phones not sent to: no Android lane for the app, or Android stopped (its breaker,
    /// its halted pool).
    var androidSkipped = 0
}

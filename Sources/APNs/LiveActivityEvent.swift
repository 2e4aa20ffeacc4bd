/// The `aps.event` of a Live Activity push: `start` (push-to-start, device push only), `update`, `end`.
public enum LiveActivityEvent: String, Sendable, CaseIterable {
    case start, update, end

    /// "a" or "an", for messages ("an update event", "a start event").
    var article: String { self == .start ? "a" : "an" }
}

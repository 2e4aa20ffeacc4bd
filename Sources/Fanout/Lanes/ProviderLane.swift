import APNs
import IO
import Sender

/// One push provider's way to its phones (APNs for iOS, FCM for Android): which lane its books
/// are kept in, and how it renders an event's group into that provider's pushes, checking them
/// against the provider's own rules and limits as it goes.
///
/// Each lane renders on its own (`EventPushes.render`): a group one lane cannot carry costs only
/// that lane's phones — counted as not sent to, with a warning naming the lane, the group and the
/// reason — and every other lane sends as usual; only a group no lane can carry refuses the
/// event (the daemon's 400, before any 202). An earthquake warning never misses iOS because
/// Android could not carry it, nor the reverse.
protocol ProviderLane: Sendable {
    /// Where its phones are counted (`PerLane`) and what its warnings and metrics call it.
    var lane: Lane { get }
    /// Sets this lane's pushes of `rendering.group` in `pushes`; throws (naming the group) when
    /// the provider could not carry them. A throw leaves `pushes` as it was.
    func render(_ rendering: LaneRendering, into pushes: inout EventPushes) throws(FanoutError)
}

/// What a lane renders one group from: the event and group, the run's clock, where answers go.
struct LaneRendering {
    let event: FanoutEvent
    let group: FanoutEvent.Group
    /// The group's broadcast channel (iOS 18 starts subscribe to it), when it has one.
    let channel: ChannelID?
    /// What starts carry (the event's own, or a widening update's earlier start's).
    let startContent: EventPushes.StartContent?
    let timestamp: Int64
    let expiration: Expiration
    /// Nil: not a run (the admission check), the event's whole deadline is left.
    let deadline: MonotonicInstant?
    let sink: PushOutcomeSink
}

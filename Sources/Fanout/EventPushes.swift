import APNs
import IO
import Sender

/// The rendered pushes of one event group, built once per run (a push job is then a token and a
/// reference to one of these): the start for iOS 18 phones (subscribed to the group's channel, or
/// asking for an update token where the group has none and the event asks — never both), the
/// start for iOS 17 phones (no `input-push-channel`, which would make them refuse it), the
/// ordinary alert for phones without Live Activities, and the update or end for activity tokens.
struct EventPushes {
    var startBroadcastCapable: PushGroup?
    var startPlain: PushGroup?
    var fallback: PushGroup?
    var activityUpdate: PushGroup?
    /// The broadcast to the group's channel (update and end).
    var broadcastBody: [UInt8]?
    /// The FCM message of an Android phone that qualifies for a start (kind `start`), and of one
    /// an update or end reaches (its kind): nil without an Android lane.
    var androidStart: PushGroup?
    var androidUpdate: PushGroup?
    /// Per lane, why it could not carry the group (over its provider's size, say), when it could
    /// not: then that lane's phones of the group are counted, not sent to, and every other lane's
    /// are sent as usual (`ProviderLane`).
    var refusals = PerLane<String?> { _ in nil }

    /// What starts carry when the event itself is an update that widened the area: the start's
    /// attributes and alert (from the event's last start serial).
    struct StartContent {
        var attributesType: String
        var attributes: [UInt8]
        var alert: LiveActivityAlert
    }

    /// The group's pushes in every lane of `lanes`, each lane on its own: one that throws has its
    /// reason in `refusals` and no pushes; when every lane refuses, the group (and so the event)
    /// cannot be sent at all, and that throws, naming each lane's reason.
    static func render(_ rendering: LaneRendering, lanes: [any ProviderLane]) throws(FanoutError) -> EventPushes {
        var pushes = EventPushes()
        var reasons: [String] = []
        for lane in lanes {
            var attempt = pushes
            do {
                try lane.render(rendering, into: &attempt)
                pushes = attempt
            } catch {
                pushes.refusals[lane.lane] = error.message
                reasons.append(error.message)
            }
        }
        if reasons.count == lanes.count, !reasons.isEmpty { throw FanoutError(.invalidEvent, reasons.joined(separator: "; ")) }
        return pushes
    }

    /// The lanes an event of an app takes: APNs always, FCM with the app's Android side.
    static func lanes(android: FCMLane?) -> [any ProviderLane] {
        [APNsLane()] + (android.map { [$0] } ?? [])
    }

    /// What the lanes could not carry, one line each (`FanoutReport.warnings`).
    var warnings: [String] { refusals.all.compactMap(\.value) }
}

extension Fanout {
    /// Renders every push the event's own fields make (its starts, fallback alerts, updates, ends,
    /// broadcasts, FCM messages) in every lane without sending any, so an event no lane can carry
    /// — too large for each provider, say — is refused when it is submitted (the daemon's 400),
    /// not after its 202. One that a lane cannot carry is no reason to refuse it (the other
    /// lanes' phones must still get it): that comes back as a warning, the same line the event's
    /// report will hold (`FanoutReport.warnings`). A widening update's starts take an earlier
    /// serial's content, which is checked when it runs.
    @discardableResult
    public static func checkPayloads(_ event: FanoutEvent, android: FCMLane? = nil) throws(FanoutError) -> [String] {
        var content: EventPushes.StartContent?
        if let type = event.attributesType, let attributes = event.attributes, let alert = event.alert {
            content = EventPushes.StartContent(attributesType: type, attributes: attributes, alert: alert)
        }
        let sink = DiscardingSink()
        var warnings: [String] = []
        let lanes = EventPushes.lanes(android: android)
        for group in event.groups {
            let rendering = LaneRendering(event: event, group: group, channel: nil, startContent: content, timestamp: event.timestamp ?? 0,
                                          expiration: .immediately, deadline: nil, sink: sink)
            warnings += try EventPushes.render(rendering, lanes: lanes).warnings
        }
        return warnings
    }
}

/// Where `checkPayloads`' never-sent pushes would report.
private final class DiscardingSink: PushOutcomeSink {
    func pushCompleted(_ push: CompletedPush) {}
}

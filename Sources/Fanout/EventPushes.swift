import APNs
import FCM
import IO
import JSONCore
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
    /// Why the group's FCM messages could not be made (over FCM's size, say), when they could not:
    /// then its Android phones are counted, not sent to, and every other phone is sent as usual.
    /// An earthquake warning must never miss iOS because the Android side could not carry it.
    var androidRefusal: String?

    /// What starts carry when the event itself is an update that widened the area: the start's
    /// attributes and alert (from the event's last start serial).
    struct StartContent {
        var attributesType: String
        var attributes: [UInt8]
        var alert: LiveActivityAlert
    }

    static func render(event: FanoutEvent, group: FanoutEvent.Group, channel: ChannelID?, startContent: StartContent?,
                       timestamp: Int64, expiration: Expiration, deadline: MonotonicInstant?,
                       sink: PushOutcomeSink, android: AndroidLane? = nil) throws(FanoutError) -> EventPushes {
        var pushes = EventPushes()
        let resendStarts = event.onUnknown == .resend
        do throws(ValidationError) {
            func liveActivity(_ payload: LiveActivityPayload) throws(ValidationError) -> Notification {
                try Notification(pushType: .liveactivity, bundle: event.app, priority: event.priority, expiration: expiration,
                                 payload: try payload.render())
            }
            if let content = startContent, let state = group.contentState {
                var start = LiveActivityPayload.start(timestamp: timestamp, attributesType: content.attributesType,
                                                      attributes: content.attributes, contentState: state, alert: content.alert)
                start.staleDate = group.staleDate
                start.relevanceScore = group.relevanceScore
                pushes.startPlain = PushGroup(label: group.topic, notification: try liveActivity(start), deadline: deadline,
                                              resendUnknown: resendStarts, sink: sink)
                // ActivityKit gives an activity exactly one push type, `.token` or `.channel(id)`:
                // `input-push-channel` and `input-push-token` are alternatives, and a strict APNs
                // refuses a start with both (BadRequestParams). A group with a channel subscribes
                // the activity to it (its updates come by broadcast); only a group without one asks
                // for an update token, when the event does.
                if let channel {
                    start.inputPushChannel = channel
                } else {
                    start.requestsUpdateToken = event.inputPushToken
                }
                pushes.startBroadcastCapable = PushGroup(label: group.topic, notification: try liveActivity(start), deadline: deadline,
                                                         resendUnknown: resendStarts, sink: sink)
            }
            if let alert = event.fallbackAlert {
                var writer = JSONWriter()
                writer.beginObject(); writer.key("aps"); writer.beginObject()
                writer.key("alert"); alert.write(to: &writer)
                if let sound = alert.sound { writer.key("sound"); writer.string(sound) }
                writer.endObject(); writer.endObject()
                let notification = try Notification(pushType: .alert, bundle: event.app, priority: .immediate, expiration: expiration,
                                                    payload: writer.bytes)
                pushes.fallback = PushGroup(label: group.topic, notification: notification, deadline: deadline, resendUnknown: resendStarts,
                                            sink: sink)
            }
            if event.kind != .start {
                var payload = event.kind == .update
                    ? LiveActivityPayload.update(timestamp: timestamp, contentState: group.contentState ?? [])
                    : LiveActivityPayload.end(timestamp: timestamp, contentState: group.contentState, dismissalDate: group.dismissalDate)
                if event.kind == .update {
                    payload.staleDate = group.staleDate
                    payload.relevanceScore = group.relevanceScore
                }
                if event.kind == .update || group.contentState != nil || group.dismissalDate != nil {
                    payload.alert = event.alert
                }
                // Updates and ends carry a timestamp: a phone shows the newest, so sending one
                // twice is harmless and an unknown outcome is always resent.
                pushes.activityUpdate = PushGroup(label: group.topic, notification: try liveActivity(payload), deadline: deadline,
                                                  resendUnknown: true, sink: sink)
                pushes.broadcastBody = try payload.render(for: .broadcast)
            }
        } catch {
            throw FanoutError(.invalidEvent, "groups[\(group.index)] (\(group.topic)): \(error)")
        }
        if let android {
            do {
                try renderAndroid(into: &pushes, event: event, group: group, startContent: startContent, deadline: deadline,
                                  projectID: android.projectID, sink: sink)
            } catch {
                pushes.androidStart = nil
                pushes.androidUpdate = nil
                pushes.androidRefusal = error.message
            }
        }
        return pushes
    }

    /// The group's FCM messages: a data message the app draws as an Android 16 Live Update
    /// (`LiveUpdateData`: key, serial, kind, group, content state, alert), HIGH for priority 10,
    /// kept by FCM for what is left of the event's deadline, collapsing on the event key; the
    /// event's `fallbackAlert` as the start's `notification`, for phones whose app is not running.
    private static func renderAndroid(into pushes: inout EventPushes, event: FanoutEvent, group: FanoutEvent.Group,
                                      startContent: StartContent?, deadline: MonotonicInstant?, projectID: String,
                                      sink: PushOutcomeSink) throws(FanoutError) {
        let remaining = deadline.map { max(.zero, $0 - MonotonicInstant.now()) } ?? event.deadline
        let options = FCMAndroidOptions(priority: event.priority == .immediate ? .high : .normal,
                                        ttl: .seconds(remaining.components.seconds), collapseKey: event.key)
        func message(_ kind: LiveUpdateKind, contentState: [UInt8], alert: LiveActivityAlert?,
                     notification: FCMNotification?) throws(FCMValidationError) -> FCMMessageTemplate {
            let data = try LiveUpdateData(eventKey: event.key, serial: Int(event.serial), kind: kind, group: group.topic,
                                          contentState: contentState, alertTitle: alert.map { text($0.title) },
                                          alertBody: alert.map { text($0.body) })
            return try FCMMessageTemplate(data: data.fields, android: options, notification: notification)
        }
        do throws(FCMValidationError) {
            if let content = startContent, let state = group.contentState {
                let notification = event.fallbackAlert.map { FCMNotification(title: text($0.title), body: text($0.body)) }
                pushes.androidStart = PushGroup(label: group.topic, template: try message(.start, contentState: state, alert: content.alert,
                                                                                         notification: notification),
                                                projectID: projectID, deadline: deadline, resendUnknown: event.onUnknown == .resend, sink: sink)
            }
            if event.kind != .start {
                let kind: LiveUpdateKind = event.kind == .update ? .update : .end
                // An end without a content state still says which Live Update ends: `{}`.
                pushes.androidUpdate = PushGroup(label: group.topic, template: try message(kind, contentState: group.contentState ?? Array("{}".utf8),
                                                                                          alert: event.alert, notification: nil),
                                                 projectID: projectID, deadline: deadline, resendUnknown: true, sink: sink)
            }
        } catch {
            throw FanoutError(.invalidEvent, "groups[\(group.index)] (\(group.topic)) for Android: \(error)")
        }
    }

    /// An alert text as Android gets it: the text, or a localized text's key (the app's string
    /// resource of that name).
    private static func text(_ text: LiveActivityAlert.Text) -> String {
        switch text {
        case let .plain(value): value
        case let .localized(key, _): key
        }
    }
}

extension Fanout {
    /// Renders every push the event's own fields make (its starts, fallback alerts, updates, ends,
    /// broadcasts) without sending any, so an event whose payload APNs would refuse — too large,
    /// say — is refused when it is submitted (the daemon's 400), not after its 202. A widening
    /// update's starts take an earlier serial's content, which is checked when it runs.
    /// With `android`, each group's FCM messages are made too: one FCM cannot carry is no reason
    /// to refuse the event (its iOS phones must still get it) and comes back as a warning, the
    /// same line the event's report will hold (`FanoutReport.warnings`).
    @discardableResult
    public static func checkPayloads(_ event: FanoutEvent, android: AndroidLane? = nil) throws(FanoutError) -> [String] {
        var content: EventPushes.StartContent?
        if let type = event.attributesType, let attributes = event.attributes, let alert = event.alert {
            content = EventPushes.StartContent(attributesType: type, attributes: attributes, alert: alert)
        }
        let sink = DiscardingSink()
        var warnings: [String] = []
        for group in event.groups {
            let pushes = try EventPushes.render(event: event, group: group, channel: nil, startContent: content, timestamp: event.timestamp ?? 0,
                                                expiration: .immediately, deadline: nil, sink: sink, android: android)
            if let refusal = pushes.androidRefusal { warnings.append(refusal) }
        }
        return warnings
    }
}

/// Where `checkPayloads`' never-sent pushes would report.
private final class DiscardingSink: PushOutcomeSink {
    func pushCompleted(_ push: CompletedPush) {}
}


import APNs
import JSONCore
import Sender

/// iOS phones through APNs: push-to-start tokens get the group's Live Activity start (one for
/// iOS 18, subscribed to the group's channel or asking for an update token; one for iOS 17,
/// without `input-push-channel`, which it would refuse), device tokens without one the event's
/// fallback alert, activity update tokens the update or end, the group's channel its broadcast.
/// Sizes are APNs' own (`Notification`, `LiveActivityPayload.render`).
struct APNsLane: ProviderLane {
    var lane: Lane { .apns }

    func render(_ rendering: LaneRendering, into pushes: inout EventPushes) throws(FanoutError) {
        let event = rendering.event, group = rendering.group, deadline = rendering.deadline, sink = rendering.sink
        let resendStarts = event.onUnknown == .resend
        do throws(ValidationError) {
            func liveActivity(_ payload: LiveActivityPayload) throws(ValidationError) -> Notification {
                try Notification(pushType: .liveactivity, bundle: event.app, priority: event.priority, expiration: rendering.expiration,
                                 payload: try payload.render())
            }
            if let content = rendering.startContent, let state = group.contentState {
                var start = LiveActivityPayload.start(timestamp: rendering.timestamp, attributesType: content.attributesType,
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
                if let channel = rendering.channel {
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
                let notification = try Notification(pushType: .alert, bundle: event.app, priority: .immediate, expiration: rendering.expiration,
                                                    payload: writer.bytes)
                pushes.fallback = PushGroup(label: group.topic, notification: notification, deadline: deadline, resendUnknown: resendStarts,
                                            sink: sink)
            }
            if event.kind != .start {
                var payload = event.kind == .update
                    ? LiveActivityPayload.update(timestamp: rendering.timestamp, contentState: group.contentState ?? [])
                    : LiveActivityPayload.end(timestamp: rendering.timestamp, contentState: group.contentState, dismissalDate: group.dismissalDate)
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
    }
}

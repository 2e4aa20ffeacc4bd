import APNs
import FCM
import IO
import Sender

/// Android phones through FCM HTTP v1, on a pool whose provider is `.fcm` (its access tokens
/// name the Firebase project): an FCM token gets the group's data message, which the app draws
/// as an Android 16 Live Update. Set on `FanoutOptions.android`; without it an event reaches iOS
/// phones only and its Android installations are counted, not sent to (`FanoutReport.androidSkipped`),
/// so an operator sees whom a configuration without an `android` member leaves out. Sizes are as
/// Google counts them (`FCMMessageTemplate`).
public struct FCMLane: ProviderLane, Sendable {
    /// The FCM pool's configuration (`provider` `.fcm`), for a run that opens its own.
    public var pool: PoolConfiguration
    /// The daemon's warm FCM pool, shared by its events; nil: the run opens one from `pool`.
    public var sharedPool: ConnectionPool?

    public init(pool: PoolConfiguration, sharedPool: ConnectionPool? = nil) {
        self.pool = pool
        self.sharedPool = sharedPool
    }

    var lane: Lane { .fcm }

    /// The Firebase project every message is sent to (`/v1/projects/{id}/messages:send`): the
    /// service account's.
    public var projectID: String { pool.provider.accessTokens?.account.projectID ?? "" }

    /// The group's FCM messages: a data message the app draws as an Android 16 Live Update
    /// (`LiveUpdateData`: key, serial, kind, group, content state, alert), HIGH for priority 10,
    /// kept by FCM for what is left of the event's deadline, collapsing on the event key; the
    /// event's `fallbackAlert` as the start's `notification`, for phones whose app is not running.
    func render(_ rendering: LaneRendering, into pushes: inout EventPushes) throws(FanoutError) {
        let event = rendering.event, group = rendering.group, deadline = rendering.deadline, sink = rendering.sink
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
            if let content = rendering.startContent, let state = group.contentState {
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
    private func text(_ text: LiveActivityAlert.Text) -> String {
        switch text {
        case let .plain(value): value
        case let .localized(key, _): key
        }
    }
}

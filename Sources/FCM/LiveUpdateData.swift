import JSONCore

/// What an event step is to the phone: the Live Update starts, changes or ends.
public enum LiveUpdateKind: String, Sendable, CaseIterable {
    case start, update, end
}

/// The `data` map of a Live Update message: what the Android app reads in
/// `FirebaseMessagingService.onMessageReceived(message)` through `message.data`, and draws as a
/// promoted ongoing notification (Android 16 Live Updates are drawn by the app, not by FCM:
/// FCM.md, "Android Live Updates are drawn by the phone"). Every value is a string, as FCM's
/// `data` requires:
///
/// | key | value |
/// |---|---|
/// | `eventKey` | the event's key (`eew-20260823020000`): one Live Update per key on the phone |
/// | `serial` | the event's revision, decimal (`"2"`); drop a message whose serial is below the one shown |
/// | `kind` | `start`, `update` or `end` |
/// | `group` | the event group the phone was targeted through (`region:301`) |
/// | `contentState` | the group's content state as JSON text (`{"forecastIntensity":"5-"}`): parse it |
/// | `alertTitle`, `alertBody` | the alert to show with this step; absent when the step has none |
///
/// The same table is in README, "Android (FCM) — data fields an app reads". Keys never start with
/// FCM's reserved `google.`/`gcm.` and are none of `from`, `notification`, `message_type`.
public struct LiveUpdateData: Sendable, Equatable {
    public let eventKey: String
    public let serial: Int
    public let kind: LiveUpdateKind
    public let group: String
    /// The content state's JSON text, exactly as given (checked to be one JSON object).
    public let contentState: String
    public let alertTitle: String?
    public let alertBody: String?

    /// The keys, in the order the map is written.
    public static let keys = ["eventKey", "serial", "kind", "group", "contentState", "alertTitle", "alertBody"]

    public init(eventKey: String, serial: Int, kind: LiveUpdateKind, group: String, contentState: [UInt8],
                alertTitle: String? = nil, alertBody: String? = nil) throws(FCMValidationError) {
        guard !eventKey.isEmpty else { throw FCMValidationError(field: "message.data.eventKey", "is empty") }
        guard serial >= 1 else { throw FCMValidationError(field: "message.data.serial", "is \(serial); serials start at 1") }
        do {
            try JSONParser.validateObject(contentState)
        } catch {
            throw FCMValidationError(field: "message.data.contentState", "is not one JSON object: \(error)")
        }
        self.eventKey = eventKey
        self.serial = serial
        self.kind = kind
        self.group = group
        self.contentState = String(decoding: contentState, as: UTF8.self)
        self.alertTitle = alertTitle
        self.alertBody = alertBody
    }

    /// The map, in `keys` order, the alert members only when given.
    public var fields: [(key: String, value: String)] {
        var out: [(key: String, value: String)] = [
            ("eventKey", eventKey), ("serial", String(serial)), ("kind", kind.rawValue), ("group", group), ("contentState", contentState),
        ]
        if let alertTitle { out.append(("alertTitle", alertTitle)) }
        if let alertBody { out.append(("alertBody", alertBody)) }
        return out
    }
}

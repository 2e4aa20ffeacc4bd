/// `android.priority` (FCM.md, "Sending"). HIGH wakes the phone at once; FCM demotes HIGH messages
/// that show nothing to NORMAL over time, so it is for messages the app turns into something visible.
public enum FCMPriority: String, Sendable, CaseIterable {
    case high = "HIGH"
    case normal = "NORMAL"
}

/// The `android` member of a message: what FCM does with it on its way to an Android phone.
public struct FCMAndroidOptions: Sendable, Equatable {
    public var priority: FCMPriority
    /// How long FCM keeps the message for an offline phone (0 to 4 weeks; `.zero` is deliver now or
    /// drop); nil leaves FCM's default, 4 weeks.
    public var ttl: Duration?
    /// Messages with the same key replace each other while the phone is offline (at most 4 keys
    /// kept per phone); nil sends a non-collapsible message.
    public var collapseKey: String?

    public init(priority: FCMPriority, ttl: Duration? = nil, collapseKey: String? = nil) {
        self.priority = priority
        self.ttl = ttl
        self.collapseKey = collapseKey
    }
}

/// The optional `notification` member: FCM itself shows it when the app is in the background, and
/// then the app is not woken to read `data`. So a Live Update (which the app draws from `data`)
/// carries none; it is for an ordinary alert to phones without Live Updates.
public struct FCMNotification: Sendable, Equatable {
    public var title: String?
    public var body: String?

    public init(title: String? = nil, body: String? = nil) {
        self.title = title
        self.body = body
    }
}

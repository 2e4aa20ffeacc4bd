/// FCM's size limit on a message sent to a token: 4,096 bytes of payload (FCM.md, "Sending";
/// Google's pages disagree on 2,048 vs 4,096 for topics, which Sokuho does not send).
///
/// Counted as Google's ErrorCode reference documents it: the **data** — "both the keys and the
/// values" — and the notification's texts, as UTF-8, unescaped; not the JSON escaping, the token,
/// the `android` options or the envelope. Sokuho sends at most `sendableBytes`, 4,096 less a
/// `margin` of 96 bytes, in case Google counts a few bytes we do not (the README states it); the
/// simulator refuses over 4,096 counted the same way.
public enum FCMPayloadLimit {
    /// Google's limit.
    public static let maximumBytes = 4096
    /// What Sokuho leaves below it.
    public static let margin = 96
    /// The most payload a message Sokuho sends carries.
    public static var sendableBytes: Int { maximumBytes - margin }

    /// The payload as FCM counts it: every data key and value, the notification's title and body.
    public static func count(data: [(key: String, value: String)], notification: FCMNotification? = nil) -> Int {
        data.reduce(0) { $0 + $1.key.utf8.count + $1.value.utf8.count }
            + (notification?.title?.utf8.count ?? 0) + (notification?.body?.utf8.count ?? 0)
    }

    /// Refuses a payload of `count` bytes over `sendableBytes`, naming both numbers and `field` ("message").
    public static func check(_ count: Int, field: String = "message") throws(FCMValidationError) {
        guard count <= sendableBytes else {
            throw FCMValidationError(field: field, "carries \(count) bytes of data and notification text (keys and values, as FCM counts them); "
                                     + "Sokuho sends at most \(sendableBytes) (FCM's \(maximumBytes) less a \(margin)-byte margin), so shorten "
                                     + "the data (content state, alert, fallback alert) by \(count - sendableBytes) bytes")
        }
    }
}

/// FCM's size limit on a message sent to a token: 4,096 bytes of "message payload" (FCM.md,
/// "Sending"; Google's pages disagree on 2,048 vs 4,096 for topics, which Sokuho does not send).
///
/// What counts is not documented byte for byte. The reading here is the strictest one: the whole
/// request body, `{"message":{…}}` with its token and every brace, must fit in 4,096 bytes. A
/// template is checked once with room for the longest token `DeviceToken` allows (255 bytes), so
/// no phone's body can be over, whatever FCM counts; the simulator refuses a body over 4,096.
public enum FCMPayloadLimit {
    public static let maximumBytes = 4096

    /// Refuses `count` bytes over the limit, naming both numbers and `field` ("message").
    public static func check(_ count: Int, field: String = "message") throws(FCMValidationError) {
        guard count <= maximumBytes else {
            throw FCMValidationError(field: field, "is \(count) bytes with the longest token; FCM takes \(maximumBytes), so shorten "
                                     + "the data (content state, alert) by \(count - maximumBytes) bytes")
        }
    }
}

/// A message, a template or a duration that FCM would refuse (or that the phone could not read),
/// caught before anything is sent. `field` is the path FCM itself would name in its BadRequest
/// detail (`message.data.from`, `message.android.ttl`), so a refusal found here and one answered
/// by FCM read the same; `message` says what is wrong and how to fix it.
public struct FCMValidationError: Error, Sendable, Equatable, CustomStringConvertible {
    public let field: String
    public let message: String

    public init(field: String, _ message: String) {
        self.field = field
        self.message = message
    }

    public var description: String { "\(field): \(message)" }
}

import JSONCore

/// An FCM answer to one send, reduced to what a sender needs: the message name on success, the
/// error, `Retry-After`, and the one action to take.
public struct FCMResponse: Sendable, Equatable {
    public let status: Int
    /// `projects/{id}/messages/{message id}` on 200.
    public let messageName: String?
    /// Empty on success.
    public let error: FCMErrorBody
    /// `Retry-After` in seconds, when sent (FCM sends it with 429 and some 503s).
    public let retryAfter: Duration?
    public let action: FCMResponseAction

    /// Builds a response from the `:status`, the `retry-after` header's value and the body (parsed
    /// only as far as the status needs).
    public init<Body: Collection>(status: Int, retryAfter: String?, body: Body) where Body.Element == UInt8 {
        self.status = status
        if (200..<300).contains(status) {
            messageName = (try? JSONParser.parse(body))?["name"]?.stringValue
            error = FCMErrorBody(code: nil, message: nil, status: nil)
        } else {
            messageName = nil
            error = FCMErrorBody(json: body)
        }
        self.retryAfter = retryAfter.flatMap(Self.retryAfterSeconds)
        action = FCMResponseAction(status: status, errorCode: error.errorCode, statusName: error.status, fieldViolations: error.fieldViolations, message: error.message)
    }

    /// The field to name when the action is `fixRequest`: the first field violation's.
    public var failedField: String? { error.fieldViolations.first?.field }

    /// `Retry-After` as delta-seconds (0…1 day); an HTTP date or garbage is ignored and the
    /// sender's own back-off applies.
    static func retryAfterSeconds(_ text: String) -> Duration? {
        guard let seconds = Int64(text), (0...86_400).contains(seconds) else { return nil }
        return .seconds(seconds)
    }
}

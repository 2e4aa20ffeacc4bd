import FCM

/// What FCM said when it refused a push, kept with its outcome (`CompletedPush.fcm`): which of
/// FCM's actions it was — so a sink tells the tokens to prune behind the circuit breaker
/// (`SENDER_ID_MISMATCH`, a malformed token) from plain dead ones (`UNREGISTERED`) without reading
/// text — the code to report it under and the field a request bug is about.
public struct FCMRefusalDetail: Sendable, Equatable {
    public let action: FCMResponseAction
    /// FcmError's `errorCode` (`UNREGISTERED`, `SENDER_ID_MISMATCH`, `QUOTA_EXCEEDED`, …), else the
    /// `google.rpc` status name (`UNAUTHENTICATED`, `PERMISSION_DENIED`), else nil.
    public let errorCode: String?
    /// The first field violation's field (`message.token`, `message.android.ttl`), if FCM named one.
    public let field: String?
    /// FCM's own words.
    public let message: String?

    public init(_ response: FCMResponse) {
        action = response.action
        errorCode = response.error.errorCode ?? response.error.status
        field = response.failedField
        message = response.error.message
    }

    /// For logs and halts: `403 PERMISSION_DENIED: Permission … denied` (the field when there is one).
    func summary(status: Int) -> String {
        "\(status) \(errorCode ?? "")" + (field.map { " (\($0))" } ?? "") + (message.map { ": \($0)" } ?? "")
    }
}

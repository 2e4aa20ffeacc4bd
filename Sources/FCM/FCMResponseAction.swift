/// What a sender does with one FCM answer: exactly one action per status, error code and field
/// (FCM.md, "Errors"), like APNs' `ResponseAction`, so the sender, the pruning and the report agree.
public enum FCMResponseAction: String, Sendable, CaseIterable {
    /// 2xx: count it as sent.
    case delivered
    /// 404 `UNREGISTERED`: the token is dead (app uninstalled, 270 days inactive). Prune it.
    case removeToken
    /// 403 `SENDER_ID_MISMATCH`, or 400 `INVALID_ARGUMENT` on the token (`fieldViolations` naming
    /// `message.token`, or none and Google's invalid-token message): prune, but count it
    /// toward the circuit breaker first. Many of these at once mean the sender is wrong (another
    /// project's credentials, tokens mangled on import), not the phones — as APNs' BadDeviceToken.
    case removeTokenBehindBreaker
    /// Any other 400: a bug in the message; never resend it unchanged, report the field once.
    case fixRequest
    /// 429 `QUOTA_EXCEEDED`/`RESOURCE_EXHAUSTED`: the project's quota is spent. Pause the whole
    /// project lane until `Retry-After` (the quota is per project, not per connection), then resend.
    case pauseProject
    /// 500 `INTERNAL`, 503 `UNAVAILABLE`: resend after a back-off (`Retry-After` honoured).
    case retry
    /// 401 `UNAUTHENTICATED`: the access token expired or was revoked. Get a new one once and resend.
    case refreshAccessToken
    /// 401 `THIRD_PARTY_AUTH_ERROR`, 403 `PERMISSION_DENIED`: the credentials or the project are
    /// wrong for every message. Halt the app's lane and alert rather than fail each message.
    case halt

    /// The action for `status`, FCM's `errorCode` and the `google.rpc.Code` name. The error code
    /// decides when there is one (a 401 `THIRD_PARTY_AUTH_ERROR` is not a token to refresh), then
    /// the status name, then the HTTP status class: 401 refresh, 403 and 404 halt (a 404 that is
    /// not UNREGISTERED is a missing project or a wrong path — every message would get it), 429
    /// pause, 5xx retry, any other fix the request. `message` is the error's own text: Google's
    /// documented answer for a bad token is an `INVALID_ARGUMENT` with no `fieldViolations` and
    /// `invalidTokenMessage` (FCM.md, "Errors"); left a request bug, such tokens stayed forever.
    public init(status: Int, errorCode: String?, statusName: String?, fieldViolations: [FCMFieldViolation], message: String? = nil) {
        if (200..<300).contains(status) { self = .delivered; return }
        let namesToken = fieldViolations.contains { $0.field == "message.token" }
            || (fieldViolations.isEmpty && message?.hasPrefix(Self.invalidTokenMessage) == true)
        switch errorCode {
        case "UNREGISTERED": self = .removeToken; return
        case "SENDER_ID_MISMATCH": self = .removeTokenBehindBreaker; return
        case "INVALID_ARGUMENT": self = namesToken ? .removeTokenBehindBreaker : .fixRequest; return
        case "QUOTA_EXCEEDED": self = .pauseProject; return
        case "UNAVAILABLE", "INTERNAL": self = .retry; return
        case "THIRD_PARTY_AUTH_ERROR": self = .halt; return
        default: break
        }
        switch statusName {
        case "UNAUTHENTICATED": self = .refreshAccessToken; return
        case "PERMISSION_DENIED": self = .halt; return
        case "RESOURCE_EXHAUSTED": self = .pauseProject; return
        case "UNAVAILABLE", "INTERNAL": self = .retry; return
        case "INVALID_ARGUMENT": self = namesToken ? .removeTokenBehindBreaker : .fixRequest; return
        default: break
        }
        switch status {
        case 400: self = namesToken ? .removeTokenBehindBreaker : .fixRequest
        case 401: self = .refreshAccessToken
        case 403, 404: self = .halt
        case 429: self = .pauseProject
        case 500..<600: self = .retry
        default: self = .fixRequest
        }
    }

    /// The message of Google's `INVALID_ARGUMENT` for a token that is not one (the error-codes page's own example).
    public static let invalidTokenMessage = "The registration token is not a valid FCM registration token"

    /// Whether the answer's `Retry-After` sets the wait (else the sender's own back-off does).
    public var honoursRetryAfter: Bool { self == .pauseProject || self == .retry }
}

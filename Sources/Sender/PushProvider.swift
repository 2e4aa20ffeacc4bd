import FCM

/// Who a pool's connections speak to, which decides how a request is authorized and how its
/// answer is judged. One per pool: APNs and FCM differ in both, so a pool never mixes them.
public enum PushProvider: Sendable {
    /// Apple: provider tokens per connection (`PoolConfiguration.providerTokens`), answers judged
    /// by `ResponseAction`.
    case apns
    /// Firebase Cloud Messaging HTTP v1: the service account's access token on every request,
    /// answers judged by `FCMResponseAction` (RetryPolicy+FCM).
    case fcm(FCMAccessTokenSource)

    /// The access tokens of an FCM pool; nil for APNs.
    public var accessTokens: FCMAccessTokenSource? {
        if case let .fcm(source) = self { return source }
        return nil
    }
}

import FCM

extension RetryPolicy {
    /// The disposition of an FCM answer, by its one `FCMResponseAction` (FCM.md, "Errors"): the
    /// same outcomes as APNs' so every report and sink reads them alike. `retryAfter` (FCM sends
    /// it with 429 and some 503s) replaces the computed back-off; `accessTokenRefreshed` says the
    /// push already got a 401 and was resent with a new token.
    public func decide(fcm action: FCMResponseAction, attempts: Int, resends: Int, random: Double, retryAfter: Duration?,
                       accessTokenRefreshed: Bool) -> Disposition {
        switch action {
        case .delivered:
            return .finish(attempts > 1 || resends > 0 ? .deliveredAfterRetry : .delivered)
        case .removeToken, .removeTokenBehindBreaker:
            // The breaker's share is told apart by the push's `fcm` detail, not by another outcome.
            return .finish(.tokenDead)
        case .fixRequest:
            return .finish(.requestBug)
        case .halt:
            return .haltPool(.authOrConnectionFailure)
        case .refreshAccessToken:
            // A fresh token refused again is not an expiry: the account cannot send.
            return accessTokenRefreshed ? .haltPool(.authOrConnectionFailure) : .resendWithNewAccessToken
        case .retry:
            guard attempts < maximumAttempts else { return .finish(.failedAfterRetry) }
            return .retry(delay: retryAfter ?? backoff(attempt: attempts, random: random))
        case .pauseProject:
            guard attempts < maximumAttempts else { return .finish(.failedAfterRetry) }
            return .pausePool(delay: retryAfter ?? backoff(attempt: attempts, random: random))
        }
    }
}

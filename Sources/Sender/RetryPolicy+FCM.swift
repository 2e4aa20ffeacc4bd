import FCM

extension RetryPolicy {
    /// The disposition of an FCM answer, by its one `FCMResponseAction` (FCM.md, "Errors"): the
    /// same outcomes as APNs' so every report and sink reads them alike. `retryAfter` (FCM sends
    /// it with 429 and some 503s) replaces the computed back-off; `accessTokenRefreshed` says the
    /// push already got a 401 and was resent with a new token. `untilDeadline`: the push has a
    /// deadline, so the project's quota (429) and Google's own trouble (500, 503) are waited out
    /// until it rather than for `maximumAttempts` — with Google's quota at 100 per 10 s, a fixed 5
    /// attempts failed 200 of 1,000 messages with 109 s of a 180 s deadline left.
    public func decide(fcm action: FCMResponseAction, attempts: Int, resends: Int, random: Double, retryAfter: Duration?,
                       accessTokenRefreshed: Bool, untilDeadline: Bool = false) -> Disposition {
        switch action {
        case .delivered:
            return Self.delivered(attempts: attempts, resends: resends)
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
            return nextAttempt(after: attempts, random: random, retryAfter: retryAfter, bounded: !untilDeadline).map { .retry(delay: $0) }
                ?? .finish(.failedAfterRetry)
        case .pauseProject:
            return nextAttempt(after: attempts, random: random, retryAfter: retryAfter, bounded: !untilDeadline).map { .pausePool(delay: $0) }
                ?? .finish(.failedAfterRetry)
        }
    }
}

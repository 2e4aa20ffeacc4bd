import FCM
import Sender
import Testing

/// The FCM decision rules as tables: pure, without sockets.
@Suite struct FCMDecisionTests {
    @Test("each FCM action has one disposition, the same outcomes as APNs'")
    func eachActionHasOneDisposition() {
        let policy = RetryPolicy()
        let cases: [(FCMResponseAction, Bool, Duration?, Disposition)] = [
            (.delivered, false, nil, .finish(.delivered)),
            (.removeToken, false, nil, .finish(.tokenDead)),
            (.removeTokenBehindBreaker, false, nil, .finish(.tokenDead)),
            (.fixRequest, false, nil, .finish(.requestBug)),
            (.halt, false, nil, .haltPool(.authOrConnectionFailure)),
            (.refreshAccessToken, false, nil, .resendWithNewAccessToken),
            (.refreshAccessToken, true, nil, .haltPool(.authOrConnectionFailure)),
            (.retry, false, .seconds(7), .retry(delay: .seconds(7))),
            (.retry, false, nil, .retry(delay: .milliseconds(500))),
            (.pauseProject, false, .seconds(30), .pausePool(delay: .seconds(30))),
            (.pauseProject, false, nil, .pausePool(delay: .milliseconds(500))),
        ]
        for (action, refreshed, retryAfter, expected) in cases {
            let decided = policy.decide(fcm: action, attempts: 1, resends: 0, random: 0, retryAfter: retryAfter, accessTokenRefreshed: refreshed)
            #expect(decided == expected, "\(action) refreshed \(refreshed) retry-after \(String(describing: retryAfter))")
        }
    }

    @Test("with a deadline, quota pauses and Google's own trouble are retried until it, never a busy loop; without one, for the attempt limit")
    func withADeadlineRetriesLastUntilIt() {
        let policy = RetryPolicy()
        for action in [FCMResponseAction.retry, .pauseProject] {
            for attempts in [policy.maximumAttempts, 40, Int(UInt16.max)] {
                let decided = policy.decide(fcm: action, attempts: attempts, resends: 0, random: 0, retryAfter: .zero,
                                            accessTokenRefreshed: false, untilDeadline: true)
                let delay: Duration? = switch decided { case let .retry(delay), let .pausePool(delay): delay; default: nil }
                #expect(delay.map { $0 >= policy.baseDelay / 2 } == true, "\(action) after \(attempts): \(decided)")
            }
        }
        #expect(policy.decide(fcm: .pauseProject, attempts: 9, resends: 0, random: 0, retryAfter: .seconds(30), accessTokenRefreshed: false,
                              untilDeadline: true) == .pausePool(delay: .seconds(30)))
    }

    @Test("retries and pauses stop at the attempt limit, and a delivery after any is counted as after a retry")
    func attemptsAreBounded() {
        let policy = RetryPolicy()
        for action in [FCMResponseAction.retry, .pauseProject] {
            #expect(policy.decide(fcm: action, attempts: policy.maximumAttempts, resends: 0, random: 0, retryAfter: nil,
                                  accessTokenRefreshed: false) == .finish(.failedAfterRetry))
        }
        #expect(policy.decide(fcm: .delivered, attempts: 1, resends: 1, random: 0, retryAfter: nil, accessTokenRefreshed: true)
                == .finish(.deliveredAfterRetry))
        #expect(policy.decide(fcm: .delivered, attempts: 2, resends: 0, random: 0, retryAfter: nil, accessTokenRefreshed: false)
                == .finish(.deliveredAfterRetry))
    }

    @Test("an access token is refreshed at 80% of its life, at least 5 minutes early when it lives long, never past halfway")
    func refreshTimes() {
        let cases: [(lifetime: Duration, refresh: Duration)] = [
            (.seconds(3599), .seconds(3599) - .seconds(3599) / 5),  // Google's: 2,879.2 s
            (.seconds(1200), .seconds(900)),  // 5 minutes early beats 80%
            (.seconds(400), .seconds(200)),  // short: halfway
            (.seconds(2), .seconds(1)),
        ]
        for (lifetime, refresh) in cases {
            #expect(FCMAccessTokenSource.refreshDelay(lifetime: lifetime) == refresh, "\(lifetime)")
        }
    }
}

import APNs
import HTTP2

/// What to do with a push after one attempt: pure logic, tested without sockets.
public enum Disposition: Sendable, Equatable {
    /// Done, with this outcome.
    case finish(PushOutcome)
    /// Send again after `delay` (a back-off retry that counts as an attempt).
    case retry(delay: Duration)
    /// Send again at once on any connection: provably unprocessed (does not count as an attempt).
    case resendRefused
    /// Send again at once although it may have been processed (the group allows duplicates).
    case resendUnknown
    /// Send again at once, and retire the connection it came back on (expired provider token,
    /// Shutdown, idle timeout, a key that does not belong to the connection).
    case resendOnNewConnection(delay: Duration)
    /// Stop the whole pool: credentials or configuration are wrong, every push would fail alike.
    case haltPool(PushOutcome)
    /// Nothing more goes out on the pool until `delay` has passed (FCM's project quota is spent),
    /// then this push is sent again (an attempt, like `retry`).
    case pausePool(delay: Duration)
    /// The access token was refused (FCM's 401): send again with a new one, once (not an attempt).
    case resendWithNewAccessToken
}

/// Back-off retries with full jitter within the push's deadline, and bounded immediate resends.
public struct RetryPolicy: Sendable, Equatable {
    /// Attempts in all (first send + retries) for a transient error.
    public var maximumAttempts = 5
    /// Back-off in seconds, not milliseconds: a 429 or 503 means the server (or the phone's
    /// budget) needs time; retries 0.5–1, 1–2, 2–4, 4–8 s apart, always within the push's deadline.
    public var baseDelay: Duration = .seconds(1)
    public var maximumDelay: Duration = .seconds(8)
    /// Bound on immediate resends of one push, so a server that refuses everything cannot loop it.
    public var maximumResends = 8

    public init() {}

    /// The delay before retry number `attempt` (1-based): uniform in [d/2, d], d = base × 2^(attempt−1)
    /// capped at `maximumDelay`. `random` is a uniform value in [0, 1).
    public func backoff(attempt: Int, random: Double) -> Duration {
        let exponent = min(max(attempt - 1, 0), 30)
        let ceiling = min(maximumDelay, baseDelay * (1 << exponent))
        return ceiling / 2 + (ceiling / 2) * random
    }

    /// The disposition of a push that got an HTTP response. `retryAfter`, from the
    /// response's `Retry-After`, replaces the computed back-off when the server gave one.
    /// `untilDeadline`: the push has a deadline, so the server's own trouble (500, 503) is retried
    /// until it rather than for `maximumAttempts` (`requeue` ends it `expired` there); a 429
    /// `TooManyRequests` is about the phone, not the server, and keeps its bounded attempts.
    public func decide(status: Int, reason: Reason?, attempts: Int, resends: Int, random: Double,
                       retryAfter: Duration? = nil, untilDeadline: Bool = false) -> Disposition {
        switch ResponseAction(status: status, reason: reason) {
        case .delivered:
            return Self.delivered(attempts: attempts, resends: resends)
        case .removeToken, .removeChannel:
            return .finish(.tokenDead)
        case .fixRequest:
            return .finish(.requestBug)
        case .fixCredentials:
            return .haltPool(.authOrConnectionFailure)
        case .retry:
            let bounded = !untilDeadline || status == 429
            return nextAttempt(after: attempts, random: random, retryAfter: retryAfter, bounded: bounded).map { .retry(delay: $0) }
                ?? .finish(.failedAfterRetry)
        case .retryOnNewConnection, .newConnection:
            guard resends < maximumResends, attempts < maximumAttempts + maximumResends else { return .finish(.failedAfterRetry) }
            return .resendOnNewConnection(delay: retryAfter ?? backoff(attempt: 1, random: random))
        }
    }

    /// A delivery, told apart when it took more than one try.
    static func delivered(attempts: Int, resends: Int) -> Disposition {
        .finish(attempts > 1 || resends > 0 ? .deliveredAfterRetry : .delivered)
    }

    /// The wait before the attempt after `attempts` (the server's `retryAfter` when it gave one),
    /// or nil when the attempts ran out (never when not `bounded`: the push's deadline ends it).
    func nextAttempt(after attempts: Int, random: Double, retryAfter: Duration?, bounded: Bool = true) -> Duration? {
        guard !bounded || attempts < maximumAttempts else { return nil }
        let delay = retryAfter ?? backoff(attempt: attempts, random: random)
        // Unbounded, a server that keeps answering Retry-After: 0 must not turn it into a busy loop.
        return bounded ? delay : max(delay, baseDelay / 2)
    }

    /// The disposition of a push whose stream ended without a response.
    public func decide(failure: StreamFailure, resendUnknown: Bool, resends: Int) -> Disposition {
        guard resends < maximumResends else {
            return .finish(failure.provablyUnprocessed ? .failedAfterRetry : .unknown)
        }
        if failure.provablyUnprocessed { return .resendRefused }
        return resendUnknown ? .resendUnknown : .finish(.unknown)
    }
}

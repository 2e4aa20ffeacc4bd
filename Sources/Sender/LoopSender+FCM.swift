import FCM
import HTTP2
import IO
import Vocabulary

/// FCM on the pool's connections: the access token each presents, and the answers judged by
/// `FCMResponseAction` into the same dispositions and outcomes as APNs'.
extension LoopSender {
    /// Sets the connection's `authorization` when the source has a newer token than it carries.
    /// False while there is none to present: the pushes wait in the ready ring, and the source
    /// wakes the loops when one comes (or halts the pool when the endpoint refused the account).
    func presentAccessToken(_ source: FCMAccessTokenSource, on slot: PooledConnection) -> Bool {
        guard let token = source.usable(now: MonotonicInstant.now()) else {
            if let refusal = source.refusal { pool.halt(.authOrConnectionFailure, message: refusal) }
            return false
        }
        if token.generation != slot.accessTokenGeneration {
            slot.connection.setAuthorization(token.authorization)
            slot.accessTokenGeneration = token.generation
        }
        return true
    }

    /// An FCM answer. A delivery is judged by its status alone (its body, the message name, is
    /// read only by a group that keeps answers): nothing is parsed or allocated for it.
    func fcmAnswered(_ response: ResponseView, job: PushJob, on slot: PooledConnection) {
        let now = MonotonicInstant.now()
        let kept = job.group.keepsAnswer ? KeptAnswer(response) : nil
        let status = response.status
        var refusal: FCMRefusalDetail?
        var action = FCMResponseAction.delivered
        var retryAfter: Duration?
        if (200..<300).contains(status) {
            slot.hadSuccess = true
        } else {
            let answer = FCMResponse(status: status, retryAfter: response.header("retry-after"), body: response.body)
            refusal = FCMRefusalDetail(answer)
            action = answer.action
            retryAfter = answer.retryAfter
        }
        let disposition = configuration.retry.decide(fcm: action, attempts: Int(job.attempts) + 1, resends: Int(job.resends),
                                                     random: nextRandom(), retryAfter: retryAfter,
                                                     accessTokenRefreshed: job.accessTokenRefreshed, untilDeadline: job.group.deadline != nil)
        if case .haltPool = disposition, let refusal {
            pool.halt(.authOrConnectionFailure, message: Self.haltMessage(refusal, status: status, afterRefresh: job.accessTokenRefreshed))
        }
        apply(disposition, to: job, on: slot, status: status, reason: nil, timestamp: nil, now: now, kept: kept, fcm: refusal)
    }

    /// Why an FCM answer stopped the pool, saying what to fix.
    static func haltMessage(_ refusal: FCMRefusalDetail, status: Int, afterRefresh: Bool) -> String {
        if refusal.action == .refreshAccessToken && afterRefresh {
            return "FCM refused a freshly granted access token (\(refusal.summary(status: status))): the service account cannot send "
                + "to this project (is the Firebase Cloud Messaging API enabled, and does the account have a messaging role?)"
        }
        return "FCM refused the credentials or project: \(refusal.summary(status: status))"
    }

    /// `template` around `token` in the loop's body buffer (valid until the next push's): sized
    /// for the longest body its templates make with the longest token, grown (once per larger
    /// template, not per push) when one needs more — FCM counts the payload, not the body, so a
    /// body with escapes may be longer than 4,096 bytes.
    func spliceBody(_ template: FCMMessageTemplate, token: DeviceToken, ttlSeconds: Int64?) -> UnsafeRawBufferPointer {
        if bodyBuffer == nil || template.maximumBodyCount > bodyCapacity {
            bodyBuffer?.deallocate()
            bodyCapacity = max(FCMPayloadLimit.maximumBytes, template.maximumBodyCount)
            bodyBuffer = .allocate(byteCount: bodyCapacity, alignment: 8)
        }
        let buffer = bodyBuffer!
        let capacity = bodyCapacity
        let count = template.write(token: token, ttlSeconds: ttlSeconds, to: UnsafeMutableRawBufferPointer(start: buffer, count: capacity))
        return UnsafeRawBufferPointer(start: buffer, count: count)
    }
}

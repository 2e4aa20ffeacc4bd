import APNs
import HTTP2
import IO

/// A stream's end, as the sender judges it: an APNs answer (FCM's: LoopSender+FCM) or a failure
/// without one, each turned into a disposition that `apply` carries out.
extension LoopSender {
    private func take(_ stream: Int, on connection: ClientConnection) -> (PooledConnection, PushJob)? {
        let slot = slots[connection.ownerIndex]
        guard stream < slot.jobs.count, let job = slot.jobs[stream].take() else { return nil }
        slot.inFlight -= 1
        return (slot, job)
    }

    func connection(_ connection: ClientConnection, didReceive response: ResponseView, stream: Int) {
        guard let (slot, job) = take(stream, on: connection) else { return }
        noteGrant(slot)
        if accessTokens != nil { return fcmAnswered(response, job: job, on: slot) }
        let now = MonotonicInstant.now()
        let isSuccess = (200..<300).contains(response.status)
        let error = isSuccess ? ErrorBody(reason: nil, timestamp: nil) : ErrorBody(json: response.bodyBytes)
        let kept = job.group.keepsAnswer ? KeptAnswer(response) : nil
        if isSuccess {
            slot.hadSuccess = true
            if !recordedAcceptedToken { recordAcceptedToken(on: slot) }
        }
        if let reason = error.reason, reason == .expiredProviderToken || reason == .invalidProviderToken,
           reason == .invalidProviderToken || confirmedExpired(on: slot),
           let diagnosis = clockDiagnosis(reason, on: slot) {
            // A wrong clock does not fix itself by reconnecting: stop once, saying what to fix.
            pool.halt(.authOrConnectionFailure, message: diagnosis)
            finish(job, .authOrConnectionFailure, status: response.status, reason: reason, timestamp: nil, now: now, kept: kept)
            return
        }
        let retryAfter = isSuccess ? nil : response.retryAfterSeconds.map { Duration.seconds($0) }
        let disposition = configuration.retry.decide(status: response.status, reason: error.reason, attempts: Int(job.attempts) + 1,
                                                     resends: Int(job.resends), random: nextRandom(), retryAfter: retryAfter,
                                                     untilDeadline: job.group.deadline != nil)
        let ids = configuration.keepsResponseIDs ? (response.header("apns-id"), response.header("apns-unique-id")) : (nil, nil)
        apply(disposition, to: job, on: slot, status: response.status, reason: error.reason, timestamp: error.timestamp, now: now, ids: ids,
              kept: kept)
    }

    func connection(_ connection: ClientConnection, didFail failure: StreamFailure, stream: Int) {
        guard let (slot, job) = take(stream, on: connection) else { return }
        let disposition = configuration.retry.decide(failure: failure, resendUnknown: job.group.resendUnknown, resends: Int(job.resends))
        apply(disposition, to: job, on: slot, status: 0, reason: nil, timestamp: nil, now: MonotonicInstant.now(),
              kept: job.group.keepsAnswer ? KeptAnswer(failure) : nil)
    }
}

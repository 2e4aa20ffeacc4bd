import APNs
import HTTP2
import IO

/// What becomes of a push after an answer or a failure: one final outcome, a back-off retry, or a
/// resend — and, after a halt, the end of everything still queued.
extension LoopSender {
    func apply(_ disposition: Disposition, to original: PushJob, on slot: PooledConnection, status: Int,
                       reason: Reason?, timestamp: Int64?, now: MonotonicInstant,
                       ids: (apnsID: String?, uniqueID: String?) = (nil, nil), kept: KeptAnswer? = nil, fcm: FCMRefusalDetail? = nil) {
        var job = original
        switch disposition {
        case let .finish(outcome):
            finish(job, outcome, status: status, reason: reason, timestamp: timestamp, now: now, ids: ids, kept: kept, fcm: fcm)
        case let .haltPool(outcome):
            // The first halt's message stays: an FCM answer halts with its own words first (LoopSender+FCM).
            pool.halt(outcome, message: "APNs refused the credentials or configuration: \(status) \(reason?.name ?? "")")
            finish(job, outcome, status: status, reason: reason, timestamp: timestamp, now: now, ids: ids, kept: kept, fcm: fcm)
        case let .retry(delay):
            job.attempts = job.attempts == .max ? .max : job.attempts + 1  // retried until a deadline: many
            counters.retries += 1
            wentOffWire(&job)
            requeue(job, after: delay, now: now, status: status, reason: reason, kept: kept)
        case .resendRefused:
            job.resends += 1
            counters.refusedResends += 1
            wentOffWire(&job)
            requeue(job, after: .zero, now: now, status: status, reason: reason, kept: kept)
        case .resendUnknown:
            job.resends += 1
            job.resentAfterUnknown = true
            counters.unknownResends += 1
            requeue(job, after: .zero, now: now, status: status, reason: reason, kept: kept)
        case let .pausePool(delay):
            // The quota is the project's: every loop holds back until it ends (PoolState.pause).
            pool.pause(until: now + delay)
            job.attempts = job.attempts == .max ? .max : job.attempts + 1  // retried until a deadline: many
            counters.retries += 1
            wentOffWire(&job)
            requeue(job, after: delay, now: now, status: status, reason: reason, kept: kept)
        case .resendWithNewAccessToken:
            // Waits in the ready ring: no connection presents the refused token any more, and the
            // loops are woken when the new one comes.
            accessTokens?.rejected(generation: slot.accessTokenGeneration)
            job.resends += 1
            job.accessTokenRefreshed = true
            counters.refusedResends += 1
            wentOffWire(&job)
            requeue(job, after: .zero, now: now, status: status, reason: reason, kept: kept)
        case let .resendOnNewConnection(delay):
            job.resends += 1
            counters.refusedResends += 1
            slot.retire = true
            slot.connection.close()
            wentOffWire(&job)
            requeue(job, after: delay, now: now, status: status, reason: reason, kept: kept)
        }
    }

    /// The answer said the push was not processed: until it is written again no connection holds
    /// it, and its sink may record that (a resumed run then sends it without doubling it).
    private func wentOffWire(_ job: inout PushJob) {
        guard !job.offWire else { return }
        job.offWire = true
        (job.group.sink ?? sink)?.pushWentOffWire(id: job.id)
    }

    /// `kept`: the answer that caused the requeue, reported if the deadline ends the push instead.
    func requeue(_ job: PushJob, after delay: Duration, now: MonotonicInstant, status: Int, reason: Reason?, kept: KeptAnswer? = nil) {
        var job = job
        let due = now + delay
        if let expiry = job.group.deadline, due >= expiry {
            finish(job, .expired, status: status, reason: reason, timestamp: nil, now: now, kept: kept)
            return
        }
        if delay == .zero && ready.free > 0 {
            ready.pushFront(job)
        } else {
            job.notBefore = due.nanoseconds
            delayed.insert(job)
        }
    }

    func finish(_ job: PushJob, _ outcome: PushOutcome, status: Int, reason: Reason?, timestamp: Int64?, now: MonotonicInstant,
                ids: (apnsID: String?, uniqueID: String?) = (nil, nil), kept: KeptAnswer? = nil, fcm: FCMRefusalDetail? = nil) {
        counters[outcome] += 1
        let latency = job.firstSubmitted == 0 ? nil : now.nanoseconds &- job.firstSubmitted
        if let latency { latencies.record(nanoseconds: latency) }
        if let sink = job.group.sink ?? sink {
            sink.pushCompleted(CompletedPush(token: job.token, id: job.id, group: job.group, outcome: outcome, status: status,
                                             reason: reason, fcm: fcm, timestamp: timestamp, resentAfterUnknown: job.resentAfterUnknown,
                                             apnsID: ids.apnsID, uniqueID: ids.uniqueID, kept: kept,
                                             latency: latency.map { .nanoseconds(Int64(clamping: $0)) }, retries: Int(job.attempts)))
        }
        finished.add(1, ordering: .releasing)
        if idle {
            publish(withLatencies: true)
            pool.loopWentIdle()  // a producer waiting for the end is told once per idle turn, not per push
        }
    }

    /// After a halt: every job still queued here ends as the halt's outcome without being sent.
    func failEverythingQueued(now: MonotonicInstant) {
        let outcome = pool.haltOutcome
        while let job = ready.popFront() { finish(job, outcome, status: 0, reason: nil, timestamp: nil, now: now) }
        while let job = delayed.popDue(now: UInt64.max) { finish(job, outcome, status: 0, reason: nil, timestamp: nil, now: now) }
        for slot in slots where slot.connection.state == .open { slot.connection.close() }
        publish(withLatencies: true)
    }
}

import IO
import TokenStore
import Vocabulary

extension EventRun {
    /// Phase 6: prunes the dead tokens, deletes an end's auto channels, and writes the serial's
    /// final record with the report (`done`, or `stopped`: running it again resumes it).
    func record(_ admitted: Admitted, channels: Channels, sending: Sending, settled: Settled) throws(FanoutError) -> FanoutResult {
        var stopped = settled.stopped
        // Superseded is done, not stopped: nothing resumes it, the later serial has the rest.
        var supersededBy: UInt32?
        if case let .superseded(newer)? = stopped { supersededBy = newer; stopped = nil }
        var (report, prunes) = sending.sink.finalReport()
        for (lane, removed) in try prune(prunes).all { report.lanes[lane].tokensRemoved = removed }
        if event.kind == .end && !options.keepChannels && stopped == nil && (event.shard?.index ?? 0) == 0 {
            if let problem = try deleteAutoChannels(channels) { stopped = problem }
        }
        report.eventKey = event.key
        report.serial = event.serial
        report.kind = event.kind.rawValue
        report.retried = settled.retries
        report.stopped = stopped?.text
        report.supersededBy = supersededBy
        report.warnings = sending.warnings
        let timing = sending.sink.timing()
        report.firstPushMs = timing.firstPush.map { ($0 - runStart).seconds * 1000 }
        report.firstAnswerMs = timing.firstAnswer.map { ($0 - runStart).seconds * 1000 }
        report.lastAnswerMs = timing.lastAnswer.map { ($0 - runStart).seconds * 1000 }
        report.seconds = (MonotonicInstant.now() - runStart).seconds
        if let earlier = admitted.earlier { report = report.adding(earlier) }
        var final = admitted.record
        final.phase = stopped == nil ? .done : .stopped
        final.updatedAt = WallClock.milliseconds()
        final.report = report.json
        // A finished update's answers go with it (nothing resumes a done serial): kept, they would
        // hold 8 bytes per phone per update for the records' retention.
        let answers: [WriteOperation] = final.phase == .done && event.kind != .start
            ? [.removeUpdateAnswers(eventKey: event.recordKey, serial: event.serial)] : []
        try storeCall { () throws(StoreError) in _ = try store.write([.putEventSerial(final)] + answers) }
        return FanoutResult(report: report, delivered: sending.samples.delivered, latencies: settled.latencies,
                            peakMemory: sending.samples.peakMemory, stopped: stopped)
    }

    /// Removes the dead tokens, 10,000 to a write; returns how many each lane removed (a token
    /// registered again after a 410's timestamp stays).
    private func prune(_ candidates: [PruneCandidate]) throws(FanoutError) -> PerLane<Int> {
        var removed = PerLane { _ in 0 }
        var start = 0
        while start < candidates.count {
            let slice = candidates[start..<min(candidates.count, start + 10_000)]
            let outcomes = try storeCall { () throws(StoreError) in
                try store.write(slice.map { .removeToken(app: event.app.text, environment: event.environment, kind: $0.kind, token: $0.token,
                                                          registeredBefore: $0.registeredBefore) })
            }
            for (candidate, outcome) in zip(slice, outcomes) where outcome == .tokenRemoved(true) { removed[Lane(kind: candidate.kind)] += 1 }
            start += slice.count
        }
        return removed
    }
}

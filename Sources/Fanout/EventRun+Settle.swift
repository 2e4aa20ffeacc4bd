import IO
import TokenStore
import Vocabulary

extension EventRun {
    /// Phase 5: waits for the answers (checkpointing every second meanwhile), lets the breaker
    /// judge what it got, and writes the start passes' final records: a finished pass marks its
    /// level done, an interrupted one keeps its window.
    func settle(_ sending: Sending, deadline: MonotonicInstant) throws(FanoutError) -> Settled {
        let sink = sending.sink, scanner = sending.scanner
        var lastCheckpoint = sending.scanStarted
        let waitLimit = max(.seconds(5), deadline - MonotonicInstant.now() + options.pool.requestTimeout)
        let gate = sending.pool.handOut
        sink.waitUntilSettled(timeout: waitLimit) {
            sending.samples.sample()
            // Every second — and at once while another run on the pool waits for the room this
            // run's recorded answers give back (the sink wakes this wait every `nudgeEvery` answers).
            if MonotonicInstant.now() - lastCheckpoint >= .seconds(1) || gate.hasWaiters || scanner.android?.handOut.hasWaiters == true {
                lastCheckpoint = MonotonicInstant.now()
                let (progress, answers) = scanner.checkpoint()
                checkpoints.whileSettling(progress) { sink.release(answers) }
            }
            // Not fatal while waiting: what a failed write held is sent again by a resumed run.
            try? sending.updates?.recordIfDue(sink)
        }
        sending.samples.sample()
        try sending.updates?.record(sink.takeUpdateAnswers())
        let breaker = sink.finishBreaker()
        var stopped = scanner.stopped ?? breaker.tripped ?? sending.pool.haltMessage.map(StopReason.poolHalted)

        let started = scanner.plans.filter { scanner.startedWindows.contains($0.window) }
        let finals = sink.finalCheckpoints(of: started.flatMap { [$0.window] + ($0.androidWindow.map { [$0] } ?? []) })
        var writes: [WriteOperation] = []
        for plan in started {
            guard let window = finals[plan.window] else { continue }
            let android = plan.androidWindow.flatMap { finals[$0] }
            if stopped == nil && window.isSettled && android?.isSettled ?? true {
                writes.append(.putStartProgress(StartProgress(eventKey: event.recordKey, topic: plan.group.topic, app: event.app.text,
                                                              environment: event.environment, doneLevel: plan.level,
                                                              updatedAt: WallClock.milliseconds())))
            } else if let progress = scanner.progress(of: plan, window, android: android) {
                writes.append(.putStartProgress(progress))
            }
        }
        // Later passes of one topic (resume, then new levels) overwrite earlier ones: the last stays.
        if let problem = try checkpoints.final(writes) { stopped = stopped ?? problem }
        return Settled(stopped: stopped, retries: breaker.retries, latencies: breaker.latencies)
    }
}

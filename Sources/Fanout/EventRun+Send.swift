import IO
import Sender
import TokenStore

extension EventRun {
    /// Phase 4: everything handed out — for an update or end its broadcasts and activity updates,
    /// then the start passes, group by group in priority order. Returns once the last chunk is
    /// with the pool (or the run was told to stop); the answers are the settle phase's.
    func send(_ admitted: Admitted, starts: Starts, channels: Channels) throws(FanoutError) -> Sending {
        let pool = try pool()
        let android = try androidPool()
        let books = try books(plans: starts.plans, gate: pool.handOut, androidGate: android?.handOut, eventStarted: admitted.record.startedAt)
        // Every push group reports to this event's sink, so the pool may be shared with other events.
        var pushes: [EventPushes] = []
        let lanes = EventPushes.lanes(android: android == nil ? nil : options.android)
        for group in event.groups {
            let rendering = LaneRendering(event: event, group: group, channel: channels.ids[group.index]?.id, startContent: starts.content,
                                          timestamp: admitted.clock.timestamp, expiration: admitted.clock.expiration,
                                          deadline: admitted.clock.deadline, sink: books.sink)
            pushes.append(try EventPushes.render(rendering, lanes: lanes))
        }
        let samples = RunSamples(start: runStart, sink: books.sink, progress: options.progress)

        // Updates and ends: one broadcast per distinct channel (iOS 18; in a cluster by the
        // event's first shard alone), then every activity update token of the event (iOS 17).
        let updates = event.kind == .start ? nil : try UpdateLedger(store: store, event: event)
        if let updates {
            if (event.shard?.index ?? 0) == 0 { try broadcast(pushes: pushes, channels: channels, pool: pool, sink: books.sink) }
            try sendToActivities(pushes: pushes, slots: books.updateSlots, pool: pool, sink: books.sink, updates: updates)
            try sendToAndroid(pushes: pushes, starts: starts.plans, slots: books.androidUpdateSlots, pool: android, sink: books.sink, updates: updates)
        }

        // Starts, group by group in priority order.
        let tally = try TokenTally.rebuilt(for: event, plans: books.plans, records: admitted.starts, options: options, store: store)
        let scanStarted = MonotonicInstant.now()
        let scanner = StartScanner(event: event, store: store, pool: pool, android: android, sink: books.sink, pushes: pushes, plans: books.plans, tally: tally,
                                   startLimit: options.startLimit, gate: pool.handOut, deadline: admitted.clock.deadline,
                                   urgent: options.urgent, checkpoints: checkpoints) {
            samples.sample()
        }
        for plan in books.plans where scanner.stopped == nil {
            try scanner.run(plan)
        }
        scanner.tally = TokenTally(remembering: false)  // not needed while waiting for the answers: give its memory back
        return Sending(sink: books.sink, scanner: scanner, pool: pool, samples: samples, scanStarted: scanStarted,
                       warnings: pushes.flatMap(\.warnings), updates: updates)
    }

    /// The sink and what its job ids name: per plan a scan window and a slot for starts, one for
    /// fallbacks and one for Android starts — with an Android side, tracked by a window of their
    /// own, its twin, counted in the FCM pool's gate —, per group a slot for activity updates and
    /// one for Android updates and ends.
    private func books(plans: [StartPlan], gate: HandOutGate, androidGate: HandOutGate?, eventStarted: UInt64) throws(FanoutError)
        -> (sink: FanoutSink, plans: [StartPlan], updateSlots: [Int], androidUpdateSlots: [Int]) {
        var slots: [PushSlot] = []
        var windows: [ScanWindow] = []
        var numbered: [StartPlan] = []
        for var plan in plans {
            plan.window = windows.count
            windows.append(ScanWindow(topic: plan.group.topic, capacity: max(16_384, 4 * gate.maximumLimit), completed: plan.resume.resumeFrom,
                                      firstSegment: plan.firstSegment))
            if let androidGate {
                // Its answers are written whole in each record (no answer log: the log is the APNs
                // scan's). The gate plus two batches, without APNs' floor: an entry holds a token of
                // up to 255 bytes inline, and this is each pass's second window (a full one holds up
                // only the FCM scan, which waits then for the message holding it).
                plan.androidWindow = windows.count
                windows.append(ScanWindow(topic: plan.group.topic, capacity: androidGate.maximumLimit + 2 * androidGate.batch,
                                          completed: plan.androidResume.resumeFrom, firstSegment: nil))
            }
            plan.startSlot = slots.count
            slots.append(PushSlot(purpose: .start, group: plan.group.index, window: plan.window, kind: .pushToStart))
            plan.fallbackSlot = slots.count
            slots.append(PushSlot(purpose: .fallback, group: plan.group.index, window: plan.window, kind: .device))
            plan.androidSlot = slots.count
            slots.append(PushSlot(purpose: .start, group: plan.group.index, window: plan.androidWindow ?? plan.window, kind: .fcm))
            numbered.append(plan)
        }
        var twins: [Int: Int] = [:]
        for plan in numbered {
            guard let android = plan.androidWindow else { continue }
            twins[plan.window] = android
            twins[android] = plan.window
        }
        let updateSlots = event.groups.map { group -> Int in
            slots.append(PushSlot(purpose: .update, group: group.index, window: nil, kind: .pushToStart))
            return slots.count - 1
        }
        let androidUpdateSlots = event.groups.map { group -> Int in
            slots.append(PushSlot(purpose: .update, group: group.index, window: nil, kind: .fcm))
            return slots.count - 1
        }
        let log = try options.logPath.map { (path) throws(FanoutError) in try AuditLog(path: path) }
        let sink = FanoutSink(slots: slots, windows: windows, twins: twins, groupTopics: event.groups.map(\.topic), log: log, gate: gate,
                              androidGate: androidGate, eventStarted: eventStarted)
        return (sink, numbered, updateSlots, androidUpdateSlots)
    }
}

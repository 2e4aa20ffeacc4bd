import APNs
import Sender
import TokenStore
import Vocabulary

extension EventRun {
    /// One broadcast per distinct channel of the event's groups, on the event's pool (broadcasts
    /// are pushes: the daemon sends them on the app's warm connections).
    func broadcast(pushes: [EventPushes], channels: Channels, pool: ConnectionPool, sink: FanoutSink) throws(FanoutError) {
        var seen: Set<ChannelID> = []
        var requests: [BroadcastRequest] = []
        for group in event.groups {
            guard let channel = channels.ids[group.index], seen.insert(channel.id).inserted, let body = pushes[group.index].broadcastBody else { continue }
            do {
                // No-Message-Stored channels take only 0; stored ones keep the message until the event's expiration.
                let expiration = channel.policy == .noMessageStored ? Expiration.immediately : try Expiration(epochSeconds: event.expiration ?? 0)
                requests.append(try BroadcastRequest(bundle: event.app, channelID: channel.id, storagePolicy: channel.policy,
                                                     priority: event.priority, expiration: expiration, requestID: APNsID.random(), payload: body))
            } catch {
                throw FanoutError(.invalidEvent, "groups[\(group.index)] broadcast: \(error)")
            }
        }
        sink.broadcastsHandedOut(requests.count)
        sink.recordBroadcasts(try ChannelClient.broadcast(requests, on: pool, timeout: .seconds(30)))
    }

    /// The update or end to every activity update token registered for the event key, but those
    /// an earlier run of this serial had an answer for.
    func sendToActivities(pushes: [EventPushes], slots: [Int], pool: ConnectionPool, sink: FanoutSink, updates: UpdateLedger) throws(FanoutError) {
        let activities = try storeCall { () throws(StoreError) in try store.activities(eventKey: event.key) }
            .filter { $0.app == event.app.text && $0.environment == event.environment }
        guard !activities.isEmpty else { return }
        // An activity registered with its topic gets that group's content; one without (or whose
        // group this serial dropped) gets the first group's.
        guard let first = event.groupsByPriority.first else { return }
        var jobs: [PushJob] = []
        var counts = PerLane { _ in ScanCounts() }
        for activity in activities {
            let group = activity.topic.flatMap { topic in event.groups.first { $0.topic == topic } } ?? first
            guard let token = DeviceToken(bytes: activity.updateToken) else { continue }
            let hash = activity.updateToken.withUnsafeBytes { UpdateLedger.hash(.apns, token: $0) }
            if let shard = event.shard, !shard.contains(hash) { continue }
            // A group APNs could not carry: its activities are counted, not sent to.
            guard let push = pushes[group.index].activityUpdate else {
                if pushes[group.index].refusals[.apns] != nil { counts[.apns].skipped += 1 }
                continue
            }
            if updates.answeredBefore(hash) { counts[.apns].answeredBeforeRestart += 1; continue }
            jobs.append(PushJob(token: token, group: push, id: PushSlot.jobID(slot: slots[group.index], sequence: 0)))
        }
        if counts[.apns].answeredBeforeRestart > 0 || counts[.apns].skipped > 0 { sink.add(counts) }
        try handOutUpdates(jobs, pool: pool, sink: sink, updates: updates)
    }

    /// Hands `jobs` to the pool a gate's batch at a time, at most the gate's limit in flight, and
    /// writes the update ledger as the answers come: `pool.send` of thousands at once blocks until
    /// nearly all are answered, and a kill meanwhile forgot every answer (the resumed update sent
    /// 1,800 phones theirs again in `UpdateResumeTests`).
    func handOutUpdates(_ jobs: [PushJob], pool: ConnectionPool, sink: FanoutSink, updates: UpdateLedger) throws(FanoutError) {
        let step = max(64, pool.handOut.batch)
        let limit = max(step, pool.handOut.limit)
        var start = 0
        while start < jobs.count {
            let end = min(jobs.count, start + step)
            while !sink.waitForInFlight(below: limit - (end - start) + 1) { try updates.recordIfDue(sink) }
            try updates.recordIfDue(sink)
            sink.willSend(end - start)
            pool.send(Array(jobs[start..<end]), urgent: options.urgent)
            start = end
        }
    }
}

extension EventRun {
    /// The update or end to every Android phone the start's rule selects: group by group in
    /// priority order, the FCM tokens of its topic at its level, each phone once (its highest
    /// group wins, as for starts). FCM has no channels and Android no update tokens, so this scan
    /// is how an update reaches them. Levels a start pass of this run covers (an update that
    /// widens the area) get that pass's start instead. A phone an earlier run of this serial had
    /// an answer for is skipped (`UpdateLedger`, written before each chunk goes out).
    func sendToAndroid(pushes: [EventPushes], starts: [StartPlan], slots: [Int], pool: ConnectionPool?, sink: FanoutSink,
                       updates: UpdateLedger) throws(FanoutError) {
        guard let pool else { return }
        var seen = Set<UInt64>()
        var jobs: [PushJob] = []
        var batch = TargetBatch()
        var counts = PerLane { _ in ScanCounts() }
        func flush() throws(FanoutError) {
            try handOutUpdates(jobs, pool: pool, sink: sink, updates: updates)
            jobs.removeAll(keepingCapacity: true)
        }
        // Phones of groups whose message FCM could not carry, counted as skipped unless another group carries them.
        var passedOver = Set<UInt64>()
        for group in event.groupsByPriority {
            let push = pushes[group.index].androidUpdate
            guard push != nil || pushes[group.index].refusals[.fcm] != nil else { continue }
            // A start pass's floor: at or below it the start went out before (this update's), above it this run starts.
            let floors = starts.filter { $0.group.index == group.index }.map { $0.floor.map(Int.init) ?? -1 }
            let level = floors.min() ?? Int(group.level)
            guard level >= 0 else { continue }
            let scan = store.scanTopic(app: event.app.text, environment: event.environment, topic: group.topic, level: UInt8(level),
                                       kind: .fcm, batch: StartScanner.scanBatch)
            while try storeCall({ () throws(StoreError) in try scan.next(into: &batch) }) {
                for index in 0..<batch.count where batch.kinds[index] == .fcm {
                    guard let (token, hash) = batch.token(at: index).withUnsafeBytes({ raw in
                        DeviceToken(raw).map { ($0, UpdateLedger.hash(.fcm, token: raw)) }
                    }) else { continue }
                    if let shard = event.shard, !shard.contains(hash) { continue }
                    guard let push else { passedOver.insert(hash); continue }
                    guard seen.insert(hash).inserted else { continue }
                    if updates.answeredBefore(hash) { counts[.fcm].answeredBeforeRestart += 1; continue }
                    jobs.append(PushJob(token: token, group: push, id: PushSlot.jobID(slot: slots[group.index], sequence: 0)))
                    if jobs.count >= StartScanner.chunk { try flush() }
                }
            }
        }
        try flush()
        counts[.fcm].skipped = passedOver.subtracting(seen).count
        if counts[.fcm].skipped > 0 || counts[.fcm].answeredBeforeRestart > 0 { sink.add(counts) }
    }
}

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

    /// The update or end to every activity update token registered for the event key.
    func sendToActivities(pushes: [EventPushes], slots: [Int], pool: ConnectionPool, sink: FanoutSink) throws(FanoutError) {
        let activities = try storeCall { () throws(StoreError) in try store.activities(eventKey: event.key) }
            .filter { $0.app == event.app.text && $0.environment == event.environment }
        guard !activities.isEmpty else { return }
        // An activity registered with its topic gets that group's content; one without (or whose
        // group this serial dropped) gets the first group's.
        guard let first = event.groupsByPriority.first else { return }
        var jobs: [PushJob] = []
        for activity in activities {
            let group = activity.topic.flatMap { topic in event.groups.first { $0.topic == topic } } ?? first
            guard let token = DeviceToken(bytes: activity.updateToken), let push = pushes[group.index].activityUpdate else { continue }
            if let shard = event.shard, !activity.updateToken.withUnsafeBytes({ shard.contains(TokenTally.hash(kind: 0, token: $0)) }) {
                continue
            }
            jobs.append(PushJob(token: token, group: push, id: PushSlot.jobID(slot: slots[group.index], sequence: 0)))
        }
        sink.willSend(jobs.count)
        pool.send(jobs, urgent: options.urgent)
    }
}

extension EventRun {
    /// The update or end to every Android phone the start's rule selects: group by group in
    /// priority order, the FCM tokens of its topic at its level, each phone once (its highest
    /// group wins, as for starts). FCM has no channels and Android no update tokens, so this scan
    /// is how an update reaches them. Levels a start pass of this run covers (an update that
    /// widens the area) get that pass's start instead. Not checkpointed: a resumed update sends
    /// again, which the app ignores (the same serial, and it drops what it is not showing).
    func sendToAndroid(pushes: [EventPushes], starts: [StartPlan], slots: [Int], pool: ConnectionPool?, sink: FanoutSink) throws(FanoutError) {
        guard let pool else { return }
        var seen = Set<UInt64>()
        var jobs: [PushJob] = []
        var batch = TargetBatch()
        let inFlightLimit = max(StartScanner.chunk, pool.handOut.limit)
        func flush() {
            guard !jobs.isEmpty else { return }
            while !sink.waitForInFlight(below: inFlightLimit) {}
            sink.willSend(jobs.count)
            pool.send(jobs, urgent: options.urgent)
            jobs.removeAll(keepingCapacity: true)
        }
        // Phones of groups whose message FCM could not carry, counted as skipped unless another group carries them.
        var passedOver = Set<UInt64>()
        for group in event.groupsByPriority {
            let push = pushes[group.index].androidUpdate
            guard push != nil || pushes[group.index].androidRefusal != nil else { continue }
            // A start pass's floor: at or below it the start went out before (this update's), above it this run starts.
            let floors = starts.filter { $0.group.index == group.index }.map { $0.floor.map(Int.init) ?? -1 }
            let level = floors.min() ?? Int(group.level)
            guard level >= 0 else { continue }
            let scan = store.scanTopic(app: event.app.text, environment: event.environment, topic: group.topic, level: UInt8(level),
                                       kind: .fcm, batch: StartScanner.scanBatch)
            while try storeCall({ () throws(StoreError) in try scan.next(into: &batch) }) {
                for index in 0..<batch.count where batch.kinds[index] == .fcm {
                    guard let (token, hash) = batch.token(at: index).withUnsafeBytes({ raw in
                        DeviceToken(raw).map { ($0, TokenTally.hash(kind: TokenKind.fcm.rawValue, token: raw)) }
                    }) else { continue }
                    if let shard = event.shard, !shard.contains(hash) { continue }
                    guard let push else { passedOver.insert(hash); continue }
                    guard seen.insert(hash).inserted else { continue }
                    jobs.append(PushJob(token: token, group: push, id: PushSlot.jobID(slot: slots[group.index], sequence: 0)))
                    if jobs.count >= StartScanner.chunk { flush() }
                }
            }
        }
        flush()
        var counts = PerLane { _ in ScanCounts() }
        counts[.fcm].skipped = passedOver.subtracting(seen).count
        if counts[.fcm].skipped > 0 { sink.add(counts) }
    }
}

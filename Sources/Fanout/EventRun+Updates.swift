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

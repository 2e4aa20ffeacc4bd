import APNs
import TokenStore

extension EventRun {
    /// Phase 3: each group's channel — explicit ones as given (with their storage policy), auto
    /// ones from the store, created on first use (together, on one connection) when starts will
    /// subscribe phones to them (`creating`).
    func channels(creating: Bool, client: ChannelClient) throws(FanoutError) -> Channels {
        var result: [Int: (id: ChannelID, policy: MessageStoragePolicy)] = [:]
        var explicitPolicies: [ChannelID: MessageStoragePolicy] = [:]
        var missing: [FanoutEvent.Group] = []
        for group in event.groups {
            switch group.channel {
            case nil:
                continue
            case let .explicit(id)?:
                if event.kind == .start { result[group.index] = (id, .noMessageStored); continue }  // only subscribed to
                if explicitPolicies[id] == nil { explicitPolicies[id] = try client.storagePolicy(of: id) }
                result[group.index] = (id, explicitPolicies[id]!)
            case .auto?:
                let name = autoChannelName(topic: group.topic)
                if let stored = try storeCall({ () throws(StoreError) in try store.channel(app: event.app.text, environment: event.environment, name: name) }),
                   let id = try? ChannelID(stored.channelID) {
                    result[group.index] = (id, stored.storagePolicy == .mostRecentMessageStored ? .mostRecentMessageStored : .noMessageStored)
                } else if creating {
                    missing.append(group)
                }
            }
        }
        // Most-Recent-Message-Stored: a phone that was offline gets the latest state.
        let created = try client.create(count: missing.count, policy: .mostRecentMessageStored)
        var records: [WriteOperation] = []
        for (group, id) in zip(missing, created) {
            records.append(.putChannel(ChannelRecord(app: event.app.text, environment: event.environment, name: autoChannelName(topic: group.topic),
                                                     channelID: id.text, storagePolicy: .mostRecentMessageStored)))
            result[group.index] = (id, .mostRecentMessageStored)
        }
        // Not synced on its own (the first start waits for this write): like the run's start
        // checkpoints, it survives a crash of the process and is synced by the run's next durable
        // write. Only a power cut before that loses it — and then the starts it covers are lost
        // from the store too, so a resumed run sends them again, on a new channel, either way.
        if !records.isEmpty { try storeCall { () throws(StoreError) in _ = try store.write(records, durable: false) } }
        return Channels(client: client, ids: result)
    }

    /// The store name of a group's auto channel: the event key and the topic.
    func autoChannelName(topic: String) -> String { event.key + "/" + topic }

    /// After an end: deletes the event's auto channels (and their records); what failed is the
    /// run's stop reason.
    func deleteAutoChannels(_ channels: Channels) throws(FanoutError) -> StopReason? {
        let auto = event.groups.filter { $0.channel == .auto }.compactMap { group in channels.ids[group.index].map { (group, $0.id) } }
        guard !auto.isEmpty else { return nil }
        let answers = try channels.client.delete(auto.map(\.1))
        var removals: [WriteOperation] = []
        var problems: [String] = []
        for ((group, id), answer) in zip(auto, answers) {
            let response = Response(status: answer.status, headers: answer.headers, body: answer.body)
            if answer.succeeded || ChannelManagementResponse.deleteSucceeded(response) {
                removals.append(.removeChannel(app: event.app.text, environment: event.environment, name: autoChannelName(topic: group.topic)))
            } else {
                problems.append("channel \(id.text) (\(group.topic)): \(answer.summary)")
            }
        }
        try storeCall { () throws(StoreError) in _ = try store.write(removals) }
        return problems.isEmpty ? nil : .channelCleanup(problems: problems)
    }
}

import APNs
import Crypto
import HTTP2
import IO
import Sender
import TokenStore
import Vocabulary

/// How a fan-out reaches APNs and what it may do beyond the event's own fields.
public struct FanoutOptions: Sendable {
    /// The push host's pool (device pushes); its provider tokens also sign the channel requests.
    public var pool: PoolConfiguration
    /// The push host and channel-management host for the few one-off requests (broadcasts,
    /// channel create/read/delete).
    public var push: ClientConnectionOptions
    public var manage: ClientConnectionOptions
    /// The app's kept channel-host connection (the daemon's, shared by its events and routes);
    /// nil: the run opens one from `manage` when it needs it and closes it at the end.
    public var channels: ChannelClient?
    /// The push-to-start budget: a phone that got `startLimit` starts from other events within
    /// `startWindow` gets no more (nil: no limit).
    public var startLimit: Int? = 8
    public var startWindow: Duration = .seconds(3600)
    /// `end` deletes the event's auto channels unless this is set.
    public var keepChannels = false
    /// `--log FILE`: one JSON line per push.
    public var logPath: String?
    /// Pushes handed to the pool and not yet answered, at most (nil: twice the pool's streams).
    public var maximumInFlight: Int?
    /// A long-lived pool to send through (the daemon's warm connections, shared by its events);
    /// nil: the run opens its own from `pool` and closes it at the end.
    public var sharedPool: ConnectionPool?
    /// Whether this event's pushes overtake the queued pushes of other events on a shared pool
    /// (an earthquake start while an election update fans out).
    public var urgent = false
    /// Called about every 200 ms with (answered, handed out) while the fan-out runs.
    public var progress: (@Sendable (Int, Int) -> Void)?
    /// Where start checkpoints go besides the store, and who may stop the run: a cluster node's
    /// shard worker (`CheckpointJournal`). Nil: the store alone, and nothing stops the run from outside.
    public var journal: (any CheckpointJournal)?

    public init(pool: PoolConfiguration, push: ClientConnectionOptions, manage: ClientConnectionOptions) {
        self.pool = pool
        self.push = push
        self.manage = manage
    }
}

/// What a fan-out did: the report, whether this run only found the serial already sent, and the
/// samples a chart draws.
public struct FanoutResult: Sendable {
    public var report: FanoutReport
    /// The same key, serial and body were sent before: nothing was sent now.
    public var alreadySent = false
    /// (seconds since the start of the run, delivered so far).
    public var delivered: [(seconds: Double, count: Int)] = []
    public var latency = LatencyHistogram()
    /// The highest resident memory seen while the fan-out ran (sampled every 200 ms).
    public var peakMemory = MemoryUse()
    /// Why this run stopped early, if it did (`report.stopped` is its text; nil when the serial
    /// was already sent).
    public var stopped: StopReason?
}

/// The product's main job: one event from the token store to every phone it concerns, through
/// the connection pool — scan → starts per group (each phone once) → pool → outcomes → store
/// writes (checkpoints, pruning). See the README's "Events" section for the semantics.
public enum Fanout {
    public static func run(_ event: FanoutEvent, store: TokenStore, options: FanoutOptions) throws(FanoutError) -> FanoutResult {
        let startedAt = WallClock.milliseconds()
        let runStart = MonotonicInstant.now()
        let records = try storeCall { () throws(StoreError) in try store.eventRecords(eventKey: event.recordKey) }
        let bodyHash = SHA256.hash(event.canonicalJSON)
        var earlier: FanoutReport?
        var firstStartedAt = startedAt
        switch EventAdmission(serial: event.serial, bodyHash: bodyHash).decision(given: records.serials) {
        case let .superseded(by: newer):
            throw FanoutError(.invalidEvent, "event '\(event.key)' serial \(event.serial) is older than serial \(newer), which was already sent; send a higher serial")
        case .conflict:
            throw FanoutError(.invalidEvent, "event '\(event.key)' serial \(event.serial) was already sent with a different body; give the new content a higher serial")
        case let .alreadySent(same):
            return FanoutResult(report: FanoutReport(json: same.report) ?? FanoutReport(), alreadySent: true)
        case let .resume(same):
            // Interrupted or stopped: resume, adding to what it did. A record without a report was
            // only accepted (the daemon records an event when it takes it, before it runs).
            earlier = same.report.isEmpty ? nil : FanoutReport(json: same.report) ?? FanoutReport()
            firstStartedAt = same.startedAt
        case .new:
            break
        }
        // Recorded before anything is sent: a crash from here on is resumed, never repeated blind.
        // A run that started records a report that counts it (empty so far: `FanoutReport()` is
        // one run), so a resumed run counts it in `runs`; a resumed run counts itself too, or
        // every killed run after the first would be forgotten (11 kills reported `runs` 2).
        var startedReport = earlier ?? FanoutReport()
        if earlier != nil { startedReport.runs += 1 }
        let record = EventSerialRecord(eventKey: event.recordKey, serial: event.serial, bodyHash: bodyHash, phase: .sending,
                                       startedAt: firstStartedAt, updatedAt: startedAt, report: startedReport.json, body: event.canonicalJSON)
        try storeCall { () throws(StoreError) in _ = try store.write([.putEventSerial(record)], durable: false) }

        // The event's clock: its deadline and expiration run from its first run, not this one.
        let deadlineMs = firstStartedAt + UInt64(event.deadline.milliseconds)
        let deadline = runStart + .milliseconds(Int64(deadlineMs) - Int64(startedAt))
        let timestamp = event.timestamp ?? Int64(startedAt / 1000)
        let expiration: Expiration
        do { expiration = try Expiration(epochSeconds: event.expiration ?? Int64(deadlineMs / 1000)) } catch {
            throw FanoutError(.invalidEvent, "expiration: \(error.message)")
        }

        let channels = options.channels ?? ChannelClient(bundle: event.app, manage: options.manage, tokens: options.pool.providerTokens,
                                                         timeout: .seconds(30))
        defer { if options.channels == nil { channels.shutdown() } }
        var plans = StartPlan.plans(for: event, progress: records.starts)
        let startContent = try self.startContent(event, needed: !plans.isEmpty, serials: records.serials, store: store)
        if startContent == nil { plans = [] }  // an update of activities started on the phones (train-follow): no starts
        let channelIDs = try resolveChannels(event, creating: !plans.isEmpty, client: channels, store: store)

        // Sink slots: per plan one for starts and one for fallbacks (tracked by the plan's
        // window), per group one for activity updates.
        var slots: [PushSlot] = []
        var windows: [ScanWindow] = []
        var numbered: [StartPlan] = []
        let maximumInFlight = options.maximumInFlight ?? max(64, 2 * options.pool.connections * options.pool.streamsPerConnection)
        for var plan in plans {
            plan.window = windows.count
            windows.append(ScanWindow(topic: plan.group.topic, capacity: max(16_384, 4 * maximumInFlight), completed: plan.resumeFrom))
            plan.startSlot = slots.count
            slots.append(PushSlot(purpose: .start, group: plan.group.index, window: plan.window, kind: .pushToStart))
            plan.fallbackSlot = slots.count
            slots.append(PushSlot(purpose: .fallback, group: plan.group.index, window: plan.window, kind: .device))
            numbered.append(plan)
        }
        let updateSlots = event.groups.map { group -> Int in
            slots.append(PushSlot(purpose: .update, group: group.index, window: nil, kind: .pushToStart))
            return slots.count - 1
        }
        let log = try options.logPath.map { (path) throws(FanoutError) in try AuditLog(path: path) }
        let sink = FanoutSink(slots: slots, windows: windows, groupTopics: event.groups.map(\.topic), log: log)
        // Every push group reports to this event's sink, so the pool may be shared with other events.
        var pushes: [EventPushes] = []
        for group in event.groups {
            pushes.append(try EventPushes.render(event: event, group: group, channel: channelIDs[group.index]?.id, startContent: startContent,
                                                 timestamp: timestamp, expiration: expiration, deadline: deadline, sink: sink))
        }
        let pool: ConnectionPool
        if let shared = options.sharedPool {
            pool = shared
        } else {
            var configuration = options.pool
            configuration.keepsResponseIDs = options.logPath != nil
            do { pool = try ConnectionPool(configuration: configuration) } catch {
                throw FanoutError(.unavailable, "cannot start the connection pool: \(error)")
            }
        }
        defer { if options.sharedPool == nil { pool.shutdown() } }

        var samples: [(seconds: Double, count: Int)] = []
        var peakMemory = MemoryUse.current()
        let sample = { () -> Void in
            peakMemory = peakMemory.peak(with: MemoryUse.current())
            let (delivered, inFlight) = sink.progress()
            samples.append(((MonotonicInstant.now() - runStart).seconds, delivered))
            options.progress?(delivered, inFlight)
        }

        // Updates and ends: one broadcast per distinct channel (iOS 18; in a cluster by the
        // event's first shard alone), then every activity update token of the event (iOS 17).
        if event.kind != .start {
            if (event.shard?.index ?? 0) == 0 { try broadcast(event, pushes: pushes, channels: channelIDs, pool: pool, sink: sink) }
            try sendToActivities(event, pushes: pushes, slots: updateSlots, store: store, pool: pool, urgent: options.urgent, sink: sink)
        }

        // Starts, group by group in priority order.
        let tally = try rebuildTally(event, plans: numbered, records: records.starts, options: options, store: store)
        let checkpoints = StartCheckpoints(store: store, journal: options.journal)
        var lastCheckpoint = MonotonicInstant.now()
        let scanner = StartScanner(event: event, store: store, pool: pool, sink: sink, pushes: pushes, plans: numbered, tally: tally,
                                   startLimit: options.startLimit, maximumInFlight: maximumInFlight, deadline: deadline,
                                   urgent: options.urgent, checkpoints: checkpoints) {
            sample()
        }
        for plan in numbered where scanner.stopped == nil {
            try scanner.run(plan)
        }
        scanner.tally = TokenTally()  // not needed while waiting for the answers: give its memory back

        // Wait for the answers, checkpointing every second.
        let waitLimit = max(.seconds(5), deadline - MonotonicInstant.now() + options.pool.requestTimeout)
        sink.waitUntilSettled(timeout: waitLimit) {
            sample()
            if MonotonicInstant.now() - lastCheckpoint >= .seconds(1) {
                lastCheckpoint = MonotonicInstant.now()
                checkpoints.whileSettling(scanner.checkpoint())
            }
        }
        sample()
        let breaker = sink.finishBreaker()
        var stopped = scanner.stopped ?? breaker.tripped ?? pool.haltMessage.map(StopReason.poolHalted)

        // Final records: finished passes mark their levels done; an interrupted one keeps its window.
        let started = numbered.filter { scanner.startedWindows.contains($0.window) }
        var writes: [WriteOperation] = []
        for (plan, window) in zip(started, sink.checkpoints(of: started.map(\.window))) {
            if stopped == nil && window.isSettled {
                writes.append(.putStartProgress(StartProgress(eventKey: event.recordKey, topic: plan.group.topic, app: event.app.text,
                                                              environment: event.environment, doneLevel: plan.level,
                                                              updatedAt: WallClock.milliseconds())))
            } else if let progress = scanner.progress(of: plan.window, window) {
                writes.append(.putStartProgress(progress))
            }
        }
        // Later passes of one topic (resume, then new levels) overwrite earlier ones: keep the last.
        if let problem = try checkpoints.final(writes) { stopped = stopped ?? problem }

        var (report, prunes) = sink.finalReport()
        report.tokensRemoved = try prune(prunes, event: event, store: store)
        if event.kind == .end && !options.keepChannels && stopped == nil && (event.shard?.index ?? 0) == 0 {
            if let problem = try deleteAutoChannels(event, channels: channelIDs, client: channels, store: store) { stopped = problem }
        }
        report.eventKey = event.key
        report.serial = event.serial
        report.kind = event.kind.rawValue
        report.retried = breaker.retries
        report.targets = report.delivered + report.prunedTotal + report.failedTotal + report.unknown + report.expired
        report.stopped = stopped?.text
        let timing = sink.timing()
        report.firstPushMs = timing.firstPush.map { ($0 - runStart).seconds * 1000 }
        report.firstAnswerMs = timing.firstAnswer.map { ($0 - runStart).seconds * 1000 }
        report.lastAnswerMs = timing.lastAnswer.map { ($0 - runStart).seconds * 1000 }
        report.seconds = (MonotonicInstant.now() - runStart).seconds
        if let earlier { report = report.adding(earlier) }
        var final = record
        final.phase = stopped == nil ? .done : .stopped
        final.updatedAt = WallClock.milliseconds()
        final.report = report.json
        try storeCall { () throws(StoreError) in _ = try store.write([.putEventSerial(final)]) }
        return FanoutResult(report: report, delivered: samples, latency: breaker.latency, peakMemory: peakMemory, stopped: stopped)
    }

    // MARK: Planning

    /// The attributes and alert starts carry: the event's own, or for an update that widens the
    /// area, those of the key's latest start serial (nil when the key never had a start).
    static func startContent(_ event: FanoutEvent, needed: Bool, serials: [EventSerialRecord], store: TokenStore) throws(FanoutError)
        -> EventPushes.StartContent? {
        guard needed else { return nil }
        if let type = event.attributesType, let attributes = event.attributes, let alert = event.alert {
            return EventPushes.StartContent(attributesType: type, attributes: attributes, alert: alert)
        }
        for record in serials.reversed() {
            guard let earlier = try? FanoutEvent(json: record.body), earlier.kind == .start,
                  let type = earlier.attributesType, let attributes = earlier.attributes, let alert = earlier.alert else { continue }
            return EventPushes.StartContent(attributesType: type, attributes: attributes, alert: alert)
        }
        // No start was ever sent for this key (activities the app started itself, as a train-follow
        // app does): an update widens nothing.
        return nil
    }

    /// Each group's channel: explicit ones as given (with their storage policy), auto ones from
    /// the store, created on first use (together, on one connection) when starts will subscribe
    /// phones to them.
    static func resolveChannels(_ event: FanoutEvent, creating: Bool, client: ChannelClient, store: TokenStore) throws(FanoutError)
        -> [Int: (id: ChannelID, policy: MessageStoragePolicy)] {
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
                let name = autoChannelName(event: event, topic: group.topic)
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
            records.append(.putChannel(ChannelRecord(app: event.app.text, environment: event.environment, name: autoChannelName(event: event, topic: group.topic),
                                                     channelID: id.text, storagePolicy: .mostRecentMessageStored)))
            result[group.index] = (id, .mostRecentMessageStored)
        }
        try storeCall { () throws(StoreError) in _ = try store.write(records) }
        return result
    }

    /// The store name of a group's auto channel: the event key and the topic.
    static func autoChannelName(event: FanoutEvent, topic: String) -> String { event.key + "/" + topic }

    /// Rebuilds which tokens this event already handled (earlier serials, an interrupted run) and
    /// how many starts other recent events sent each token (the start budget).
    static func rebuildTally(_ event: FanoutEvent, plans: [StartPlan], records: [StartProgress], options: FanoutOptions,
                             store: TokenStore) throws(FanoutError) -> TokenTally {
        var tally = TokenTally()
        guard !plans.isEmpty else { return tally }
        for progress in records {
            try forEachHandled(progress, store: store) { hash, _ in tally.markHandled(hash) }
        }
        guard let limit = options.startLimit else { return tally }
        let since = WallClock.milliseconds() - UInt64(options.startWindow.milliseconds)
        // A shard's records count as its event's: one event is one start, whichever shard sent it.
        let recent = try storeCall { () throws(StoreError) in try store.startProgress(updatedSince: since) }
            .filter { eventKey(of: $0) != event.key && $0.app == event.app.text && $0.environment == event.environment }
        let byKey = Dictionary(grouping: recent, by: eventKey(of:))
        // Fewer recent events than the limit cannot put any phone over it: skip the scan.
        guard byKey.count >= limit else { return tally }
        for (_, progresses) in byKey {
            var once = TokenTally()
            for progress in progresses {
                try forEachHandled(progress, store: store) { hash, kind in
                    if kind == .pushToStart && once.markHandled(hash) { tally.countRecentStart(hash) }
                }
            }
        }
        return tally
    }

    /// The event a start-progress record belongs to (a shard's record names its shard too).
    static func eventKey(of progress: StartProgress) -> String { ShardRecordKey.eventKey(of: progress.eventKey) ?? progress.eventKey }

    /// Calls `body` for every target a start-progress record counts as handled.
    static func forEachHandled(_ progress: StartProgress, store: TokenStore, _ body: (UInt64, TokenKind) -> Void) throws(FanoutError) {
        var batch = TargetBatch()
        if let done = progress.doneLevel {
            let scan = store.scanTopic(app: progress.app, environment: progress.environment, topic: progress.topic, level: done)
            while try storeCall({ () throws(StoreError) in try scan.next(into: &batch) }) {
                for index in 0..<batch.count {
                    let kind = batch.kinds[index]
                    batch.token(at: index).withUnsafeBytes { body(TokenTally.hash(kind: kind.rawValue, token: $0), kind) }
                }
            }
        }
        guard let level = progress.scanLevel, !progress.submitted.isEmpty else { return }
        let scan = store.scanTopic(app: progress.app, environment: progress.environment, topic: progress.topic, level: level)
        while try storeCall({ () throws(StoreError) in try scan.next(into: &batch) }) {
            for index in 0..<batch.count {
                let minLevel = batch.minLevels[index]
                if let done = progress.doneLevel, minLevel <= done { continue }
                let kind = batch.kinds[index]
                let tokenSlice = batch.token(at: index)
                guard let token = DeviceTokenBytes(bytes: tokenSlice) else { continue }
                let entry = ScanWindow.Entry(token: token, minLevel: minLevel, kindByte: kind.rawValue | (batch.broadcast[index] ? 0x80 : 0))
                guard ScanWindow.precedesOrEquals(ScanWindow.position(of: entry), progress.submitted) else { return }
                tokenSlice.withUnsafeBytes { body(TokenTally.hash(kind: kind.rawValue, token: $0), kind) }
            }
        }
    }

    // MARK: Updates and ends

    /// One broadcast per distinct channel of the event's groups, on the event's pool (broadcasts
    /// are pushes: the daemon sends them on the app's warm connections).
    static func broadcast(_ event: FanoutEvent, pushes: [EventPushes], channels: [Int: (id: ChannelID, policy: MessageStoragePolicy)],
                          pool: ConnectionPool, sink: FanoutSink) throws(FanoutError) {
        var seen: Set<ChannelID> = []
        var requests: [BroadcastRequest] = []
        for group in event.groups {
            guard let channel = channels[group.index], seen.insert(channel.id).inserted, let body = pushes[group.index].broadcastBody else { continue }
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
    static func sendToActivities(_ event: FanoutEvent, pushes: [EventPushes], slots: [Int], store: TokenStore, pool: ConnectionPool, urgent: Bool,
                                 sink: FanoutSink) throws(FanoutError) {
        let activities = try storeCall { () throws(StoreError) in try store.activities(eventKey: event.key) }
            .filter { $0.app == event.app.text && $0.environment == event.environment }
        guard !activities.isEmpty else { return }
        // An activity registered with its topic gets that group's content; one without (or whose
        // group this serial dropped) gets the first group's.
        guard let first = event.groupsByPriority.first else { return }
        var jobs: [PushJob] = []
        for activity in activities {
            let group = activity.topic.flatMap { topic in event.groups.first { $0.topic == topic } } ?? first
            guard let token = DeviceTokenBytes(bytes: activity.updateToken), let push = pushes[group.index].activityUpdate else { continue }
            if let shard = event.shard, !activity.updateToken.withUnsafeBytes({ shard.contains(TokenTally.hash(kind: 0, token: $0)) }) {
                continue
            }
            jobs.append(PushJob(token: token, group: push, id: PushSlot.jobID(slot: slots[group.index], sequence: 0)))
        }
        sink.willSend(jobs.count)
        pool.send(jobs, urgent: urgent)
    }

    /// Deletes the event's auto channels (and their records); returns a problem to report, if any.
    static func deleteAutoChannels(_ event: FanoutEvent, channels: [Int: (id: ChannelID, policy: MessageStoragePolicy)],
                                   client: ChannelClient, store: TokenStore) throws(FanoutError) -> StopReason? {
        let auto = event.groups.filter { $0.channel == .auto }.compactMap { group in channels[group.index].map { (group, $0.id) } }
        guard !auto.isEmpty else { return nil }
        let answers = try client.delete(auto.map(\.1))
        var removals: [WriteOperation] = []
        var problems: [String] = []
        for ((group, id), answer) in zip(auto, answers) {
            let response = Response(status: answer.status, headers: answer.headers, body: answer.body)
            if answer.succeeded || ChannelManagementResponse.deleteSucceeded(response) {
                removals.append(.removeChannel(app: event.app.text, environment: event.environment, name: autoChannelName(event: event, topic: group.topic)))
            } else {
                problems.append("channel \(id.text) (\(group.topic)): \(answer.summary)")
            }
        }
        try storeCall { () throws(StoreError) in _ = try store.write(removals) }
        return problems.isEmpty ? nil : .channelCleanup(problems: problems)
    }

    // MARK: Pruning

    /// Removes the dead tokens; returns how many were removed (a token registered again after a
    /// 410's timestamp stays).
    static func prune(_ candidates: [PruneCandidate], event: FanoutEvent, store: TokenStore) throws(FanoutError) -> Int {
        var removed = 0
        var start = 0
        while start < candidates.count {
            let slice = candidates[start..<min(candidates.count, start + 10_000)]
            let outcomes = try storeCall { () throws(StoreError) in
                try store.write(slice.map { .removeToken(app: event.app.text, environment: event.environment, kind: $0.kind, token: $0.token,
                                                          registeredBefore: $0.registeredBefore) })
            }
            removed += outcomes.filter { $0 == .tokenRemoved(true) }.count
            start += slice.count
        }
        return removed
    }

    static func storeCall<T>(_ body: () throws(StoreError) -> T) throws(FanoutError) -> T {
        do { return try body() } catch { throw FanoutError(.store, error.description) }
    }
}

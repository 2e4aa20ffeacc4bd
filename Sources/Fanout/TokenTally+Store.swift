import APNs
import Sender
import TokenStore
import Vocabulary

extension TokenTally {
    /// Rebuilt from the store for a run: which tokens this event already handled (earlier
    /// serials, an interrupted run) and how many starts other recent events sent each token (the
    /// start budget). Empty when the run has no start passes.
    static func rebuilt(for event: FanoutEvent, plans: [StartPlan], records: [StartProgress], options: FanoutOptions,
                        store: TokenStore) throws(FanoutError) -> TokenTally {
        guard !plans.isEmpty else { return TokenTally(remembering: false) }
        // Other recent events' starts, when enough of them could put a phone over the budget.
        var recentByKey: [String: [StartProgress]] = [:]
        if let limit = options.startLimit {
            let since = WallClock.milliseconds() - UInt64(options.startWindow.milliseconds)
            // A shard's records count as its event's: one event is one start, whichever shard sent it.
            let recent: [StartProgress]
            do { recent = try store.startProgress(updatedSince: since) } catch { throw FanoutError(.store, error.description) }
            let others = recent.filter { eventKey(of: $0) != event.key && $0.app == event.app.text && $0.environment == event.environment }
            let byKey = Dictionary(grouping: others, by: eventKey(of:))
            // Fewer recent events than the limit cannot put any phone over it: skip the scan.
            if byKey.count >= limit { recentByKey = byKey }
        }
        // What this event handled before in a topic other than its one pass's: only then, or
        // with several passes, can a target come twice.
        let single = plans.count == 1 ? plans[0].group.topic : nil
        let earlier = records.filter { $0.topic != single && ($0.doneLevel != nil || $0.scanLevel != nil) }
        let remembering = plans.count > 1 || !earlier.isEmpty || !recentByKey.isEmpty
        guard remembering else { return TokenTally(remembering: false) }
        // Sized for every target of every topic it may meet, so it never grows mid-run.
        var expected = 0
        let topics = Set(plans.map(\.group.topic) + earlier.map(\.topic) + recentByKey.values.joined().map(\.topic))
        do {
            for topic in topics { expected += try store.topicTargetCount(app: event.app.text, environment: event.environment, topic: topic) }
        } catch { throw FanoutError(.store, error.description) }
        var tally = TokenTally(expecting: expected)
        for progress in earlier {
            try forEachHandled(progress, store: store) { hash, _ in tally.markHandled(hash) }
        }
        for (_, progresses) in recentByKey {
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
    private static func eventKey(of progress: StartProgress) -> String { ShardRecordKey.eventKey(of: progress.eventKey) ?? progress.eventKey }

    /// Calls `body` for every target a start-progress record counts as handled.
    private static func forEachHandled(_ progress: StartProgress, store: TokenStore, _ body: (UInt64, TokenKind) -> Void) throws(FanoutError) {
        var batch = TargetBatch()
        if let done = progress.doneLevel {
            let scan = store.scanTopic(app: progress.app, environment: progress.environment, topic: progress.topic, level: done)
            while try next(scan, into: &batch) {
                for index in 0..<batch.count {
                    let kind = batch.kinds[index]
                    batch.token(at: index).withUnsafeBytes { body(TokenTally.hash(kind: kind.rawValue, token: $0), kind) }
                }
            }
        }
        guard let level = progress.scanLevel else { return }
        // A record with an Android part scanned its FCM tokens apart: each scan up to its own end.
        var scans: [(submitted: [UInt8], kind: TokenKind?, excluding: TokenKind?)] = []
        if let android = progress.android {
            scans = [(progress.submitted, nil, .fcm), (android.submitted, .fcm, nil)]
        } else {
            scans = [(progress.submitted, nil, nil)]
        }
        scans: for (submitted, kind, excluding) in scans where !submitted.isEmpty {
            let scan = store.scanTopic(app: progress.app, environment: progress.environment, topic: progress.topic, level: level,
                                       kind: kind, excluding: excluding)
            while try next(scan, into: &batch) {
                for index in 0..<batch.count {
                    let minLevel = batch.minLevels[index]
                    if let done = progress.doneLevel, minLevel <= done { continue }
                    let kind = batch.kinds[index]
                    let tokenSlice = batch.token(at: index)
                    guard let token = DeviceToken(bytes: tokenSlice) else { continue }
                    let entry = ScanWindow.Entry(token: token, minLevel: minLevel, kindByte: kind.rawValue | (batch.broadcast[index] ? 0x80 : 0))
                    guard ScanWindow.precedesOrEquals(ScanWindow.position(of: entry), submitted) else { continue scans }
                    tokenSlice.withUnsafeBytes { body(TokenTally.hash(kind: kind.rawValue, token: $0), kind) }
                }
            }
        }
    }

    private static func next(_ scan: TopicScan, into batch: inout TargetBatch) throws(FanoutError) -> Bool {
        do { return try scan.next(into: &batch) } catch { throw FanoutError(.store, error.description) }
    }
}

import APNs
import IO
import Sender
import TokenStore
import Vocabulary

/// One target waiting for its chunk: its window entry, and the group to send it with (nil:
/// handled without sending).
struct ChunkTarget {
    var entry: ScanWindow.Entry
    var group: PushGroup?
    var slot: Int
}

/// Runs start plans: scans the store, decides per target (send, duplicate, over budget, answered
/// before a restart), hands pushes to the pool in chunks, and checkpoints. Runs on the caller's
/// thread; the pool's loops answer through the sink.
final class StartScanner {
    let event: FanoutEvent
    let store: TokenStore
    let pool: ConnectionPool
    /// The FCM pool Android starts go to (nil: no Android lane, Android phones are counted as
    /// skipped), and the sink slots whose jobs are FCM messages.
    let android: ConnectionPool?
    let androidSlots: Set<Int>
    let sink: FanoutSink
    let pushes: [EventPushes]
    /// The plans this scanner runs, to name a window's topic and levels.
    let plans: [StartPlan]
    var tally: TokenTally
    let startLimit: Int?
    /// The pool's bound on what every run on it has handed out unanswered (`HandOutGate`).
    let gate: HandOutGate
    /// After this the event sends nothing more (nil: no deadline).
    let deadline: MonotonicInstant
    /// Whether the pushes overtake other events' queued pushes on a shared pool.
    let urgent: Bool
    /// Where checkpoints go (the store, then the run's journal), and who may stop the run.
    let checkpoints: StartCheckpoints
    /// Why sending stopped early (the breaker, a halted pool, the journal).
    private(set) var stopped: StopReason?
    /// Whether the journal stopped the run: then nothing more goes to the pool.
    private var cancelled = false
    private var lastCheckpoint = MonotonicInstant.now()
    /// Called at least every 200 ms while waiting (checkpoints, progress, samples).
    let tick: () -> Void

    /// Targets read from the store per batch; targets per chunk (each chunk first records how far
    /// the scan got: the write-ahead that bounds duplicates after a crash). A chunk's pushes are at
    /// most the gate's batch.
    static let scanBatch = 4096
    static let chunk = 2048
    /// Answers after which a wait for room checkpoints (besides every second).
    static let checkpointAnswers = 1000

    init(event: FanoutEvent, store: TokenStore, pool: ConnectionPool, android: ConnectionPool?, sink: FanoutSink, pushes: [EventPushes],
         plans: [StartPlan], tally: TokenTally, startLimit: Int?, gate: HandOutGate, deadline: MonotonicInstant, urgent: Bool,
         checkpoints: StartCheckpoints, tick: @escaping () -> Void) {
        self.event = event
        self.store = store
        self.pool = pool
        self.android = android
        androidSlots = Set(plans.map(\.androidSlot))
        self.sink = sink
        self.pushes = pushes
        self.plans = plans
        self.tally = tally
        self.startLimit = startLimit
        self.gate = gate
        self.deadline = deadline
        self.urgent = urgent
        self.checkpoints = checkpoints
        self.tick = tick
    }

    private var pending: [ChunkTarget] = []
    private var sentAny = false
    /// How many of `pending` are sent (the others are handled without a push).
    private var pendingSends = 0

    /// Hashes of the earlier run's off-the-wire pushes this run has handed out again: a resumed
    /// pass's checkpoints drop them from the earlier run's off-wire list (on the wire now).
    private(set) var resentOffWire: Set<UInt64> = []
    /// Those of them in the chunk not yet handed out (a checkpoint before then keeps them off the wire).
    private var pendingOffWire: [UInt64] = []

    /// Windows whose plan has started: only those have progress to record (a plan that never ran
    /// keeps the record it had, e.g. an earlier run's unfinished window).
    private(set) var startedWindows: Set<Int> = []

    func run(_ plan: StartPlan) throws(FanoutError) {
        startedWindows.insert(plan.window)
        var counts = ScanCounts()
        defer { sink.add(counts) }
        let groupPushes = pushes[plan.group.index]
        let scan = store.scanTopic(app: event.app.text, environment: event.environment, topic: plan.group.topic, level: plan.level,
                                   after: TopicWatermark(bytes: plan.resumeFrom), batch: Self.scanBatch)
        var batch = TargetBatch()
        var inOldWindow = !plan.oldSubmitted.isEmpty
        pending.reserveCapacity(Self.chunk)
        while true {
            checkShouldStop()
            if stopped != nil { return }
            let more: Bool
            do { more = try scan.next(into: &batch) } catch { throw FanoutError(.store, error.description) }
            guard more else { break }
            // Android's own stop (its breaker, its halted pool) ends its starts, not the event's.
            let androidStopped = android == nil || sink.androidStopped != nil
            for index in 0..<batch.count {
                if stopped != nil { return }
                let minLevel = batch.minLevels[index]
                if let floor = plan.floor, minLevel <= floor { continue }
                let kind = batch.kinds[index]
                let broadcast = batch.broadcast[index]
                let tokenSlice = batch.token(at: index)
                guard let (token, hash) = tokenSlice.withUnsafeBytes({ raw in
                    DeviceToken(raw).map { ($0, TokenTally.hash(kind: kind.rawValue, token: raw)) }
                }) else { continue }
                if let shard = event.shard, !shard.contains(hash) { continue }  // another shard's phone
                var entry = ScanWindow.Entry(token: token, minLevel: minLevel, kindByte: kind.rawValue | (broadcast ? 0x80 : 0), hash: hash)
                let group: PushGroup?
                let slot: Int
                if kind == .pushToStart {
                    group = broadcast ? groupPushes.startBroadcastCapable : groupPushes.startPlain
                    slot = plan.startSlot
                } else if kind == .fcm {
                    // An Android phone: its Live Update start through FCM. Without a lane (no
                    // `android` member for the app) or once Android stopped, counted, not sent.
                    guard !androidStopped, let start = groupPushes.androidStart else {
                        if !tally.isHandled(hash) { tally.markHandled(hash); counts.androidSkipped += 1 }
                        continue
                    }
                    group = start
                    slot = plan.androidSlot
                } else {
                    // Alerts go only to installations without a push-to-start token: the others
                    // get (or got) the Live Activity itself.
                    guard let fallback = groupPushes.fallback, try !hasPushToStartToken(device: tokenSlice) else { continue }
                    group = fallback
                    slot = plan.fallbackSlot
                }
                if inOldWindow {
                    if ScanWindow.precedesOrEquals(ScanWindow.position(of: entry), plan.oldSubmitted) {
                        if plan.oldAnswered.contains(hash) {
                            counts.answeredBeforeRestart += 1
                            entry.answered = true
                        } else if plan.oldOffWire.contains(hash) {
                            // Answered "not processed" and waiting for its back-off resend when
                            // the earlier run died: on no connection, so sending it now cannot
                            // put a second start on the phone. Kept as off the wire in this run's
                            // checkpoints until this send is on record (`resentOffWire`).
                            counts.resentAfterBackOff += 1
                            pendingOffWire.append(hash)
                        } else if event.onUnknown == .report {
                            // In flight when the earlier run died: it may have arrived. A second
                            // start would put a second activity on the phone.
                            counts.unknown += 1
                            entry.answered = true
                        } else {
                            // `resend`: sent again, maybe a second start on the phone; the report says so.
                            counts.resentAfterUnknown += 1
                        }
                        tally.markHandled(hash)
                        try add(ChunkTarget(entry: entry, group: entry.answered ? nil : group, slot: slot), window: plan.window)
                        continue
                    }
                    inOldWindow = false
                }
                if tally.isHandled(hash) {
                    counts.duplicatesAvoided += 1
                    entry.answered = true
                    try add(ChunkTarget(entry: entry, group: nil, slot: slot), window: plan.window)
                    continue
                }
                tally.markHandled(hash)
                // The start budget counts Android starts too: a Live Update is as loud as an activity.
                if kind != .device, let limit = startLimit, tally.recentStarts(hash) >= limit {
                    counts.skippedByBudget += 1
                    entry.answered = true
                    try add(ChunkTarget(entry: entry, group: nil, slot: slot), window: plan.window)
                    continue
                }
                if MonotonicInstant.now() >= deadline {
                    // Past the event's deadline nothing more is sent; what was not is expired.
                    counts.expired += 1
                    continue
                }
                try add(ChunkTarget(entry: entry, group: group, slot: slot), window: plan.window)
            }
        }
        try flush(window: plan.window)
    }

    private func add(_ target: ChunkTarget, window: Int) throws(FanoutError) {
        pending.append(target)
        if target.group != nil { pendingSends += 1 }
        // A chunk sends at most the gate's batch: `flush` takes the gate's room for all of its
        // sends at once. The very first push goes out at once: an earthquake warning's first
        // phone should not wait for a chunk to fill.
        if pending.count >= Self.chunk || pendingSends >= gate.batch || (!sentAny && target.group != nil) {
            try flush(window: window)
        }
    }

    /// Hands the pending targets to the window and their pushes to the pool: waits for room in
    /// the window and in the pool's gate, records the scan position and every window's new
    /// answers first (so a crash can hide neither a sent push nor an answered one), then sends.
    /// While it waits, its answers are recorded as they come (every `nudgeEvery`, a second, or
    /// `checkpointAnswers`), each checkpoint giving their room in the gate back: what the pool's
    /// runs have handed out and not recorded as answered never exceeds the gate, so neither do the
    /// unknowns after a kill.
    func flush(window: Int) throws(FanoutError) {
        guard !pending.isEmpty else { return }
        let sends = pendingSends
        var admitted = sends == 0
        while stopped == nil && !admitted {
            var room = sink.waitForRoom(in: window, entries: pending.count)
            if case .ready = room {
                if gate.acquire(sends, until: MonotonicInstant.now() + .milliseconds(200)) { admitted = true; break }
                try recordAnswers()
                room = sink.waited(in: window)
            }
            guard case let .waited(answers, tripped) = room else { continue }
            if let tripped { stopped = tripped }
            checkShouldStop()
            if MonotonicInstant.now() - lastCheckpoint >= .seconds(1) || answers >= Self.checkpointAnswers {
                try recordAnswers(including: [window])
                tick()
                lastCheckpoint = MonotonicInstant.now()
            }
        }
        // Told to stop: this chunk is neither recorded nor sent — whoever resumes the event sends
        // it (a cluster's next lease holder), so no phone is lost or doubled.
        var jobs: [PushJob] = []
        var progress: StartProgress?
        var others = FanoutSink.Answers()
        if !cancelled, admitted {
            jobs.reserveCapacity(sends)
            let handed = sink.handOut(pending, window: window, into: &jobs)
            resentOffWire.formUnion(pendingOffWire)
            progress = self.progress(of: window, handed.checkpoint)
            others = handed.others
        }
        if admitted, jobs.count < sends { gate.release(sends - jobs.count) }
        pending.removeAll(keepingCapacity: true)
        pendingOffWire.removeAll(keepingCapacity: true)
        pendingSends = 0
        try write(others)
        try write(progress)
        if !jobs.isEmpty {
            sentAny = true
            send(jobs)
        }
        if let halt = pool.haltMessage { stopped = .poolHalted(halt) }
        if let halt = android?.haltMessage { sink.stopAndroid(.poolHalted(halt)) }
        if let reason = sink.breakerTrip() { stopped = reason }
        if MonotonicInstant.now() - lastCheckpoint >= .seconds(1) { tick(); lastCheckpoint = MonotonicInstant.now() }
    }

    /// Writes the checkpoints of every window with answers not yet on record (and `including`'s),
    /// then gives those answers' room in the gate back.
    private func recordAnswers(including: [Int] = []) throws(FanoutError) {
        try write(sink.takeAnswers(including: including))
    }

    private func write(_ answers: FanoutSink.Answers) throws(FanoutError) {
        for (window, checkpoint) in answers.checkpoints { try write(progress(of: window, checkpoint)) }
        gate.release(answers.released)
    }

    private func checkShouldStop() {
        guard !cancelled, let reason = checkpoints.stopReason() else { return }
        cancelled = true
        stopped = reason
    }

    private func write(_ progress: StartProgress?) throws(FanoutError) {
        guard let progress else { return }
        // Not recorded where it must be (a cluster's Redis): the chunk this covers still goes out
        // (its pushes are counted in flight already), nothing after it does.
        if let reason = try checkpoints.beforeChunk(progress, journaled: !cancelled) {
            cancelled = true
            stopped = reason
        }
    }

    /// Whether the installation holding this device token also has a push-to-start token.
    private func hasPushToStartToken(device token: ArraySlice<UInt8>) throws(FanoutError) -> Bool {
        do {
            guard let owner = try store.tokenOwner(app: event.app.text, environment: event.environment, kind: .device, token: Array(token)),
                  let installation = try store.installation(id: owner.installationID) else { return false }
            return installation.pushToStartToken != nil
        } catch {
            throw FanoutError(.store, error.description)
        }
    }
}

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
    /// Phones a group whose pushes their lane could not carry passed over, counted as skipped
    /// until a later group carries them (`EventPushes.refusals`): not marked handled, so that
    /// group still may. Empty unless a lane refused a group.
    var passedOverByRefusedGroup = Set<UInt64>()
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
    /// Targets in the APNs scan's first turn when an FCM scan takes turns with it.
    static let firstTurn = 16
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
    /// The batch each scan reads into (reused).
    var batch = TargetBatch()
    private var sentAny = false
    /// How many of `pending` are sent (the others are handled without a push).
    private var pendingSends = 0

    /// Hashes of the earlier run's off-the-wire pushes this run has handed out again: a resumed
    /// pass's checkpoints drop them from the earlier run's off-wire list (on the wire now).
    private(set) var resentOffWire: Set<UInt64> = []
    /// Those of them in the chunk not yet handed out (a checkpoint before then keeps them off the wire).
    var pendingOffWire: [UInt64] = []

    /// Windows whose plan has started: only those have progress to record (a plan that never ran
    /// keeps the record it had, e.g. an earlier run's unfinished window).
    private(set) var startedWindows: Set<Int> = []

    /// One scan of a pass: its non-FCM targets (every target, without an Android window), or its
    /// FCM targets, with the window and gate they count in and where the scan resumes.
    struct Part {
        let window: Int
        let scan: TopicScan
        let resume: StartPlan.Resume
        let gate: HandOutGate
        /// Still inside the window the earlier run had handed out (its answers decide).
        var inOldWindow: Bool
        var done = false
    }

    /// Runs one pass. With an Android window its FCM targets are a scan of their own, taken in
    /// turn with the others whenever the FCM pool's gate and window have room for a batch (and
    /// without waiting once the others are done): Android phones get their start with the first
    /// iOS phones instead of after the last, and an FCM message held by Google's quota never
    /// holds up an iOS start.
    func run(_ plan: StartPlan) throws(FanoutError) {
        startedWindows.insert(plan.window)
        var counts = PerLane { _ in ScanCounts() }
        defer { sink.add(counts) }
        let groupPushes = pushes[plan.group.index]
        func scan(kind: TokenKind?, excluding: TokenKind?, from resume: StartPlan.Resume, batch: Int) -> TopicScan {
            store.scanTopic(app: event.app.text, environment: event.environment, topic: plan.group.topic, level: plan.level, kind: kind,
                            excluding: excluding, after: TopicWatermark(bytes: resume.resumeFrom), batch: batch)
        }
        // With an FCM scan beside it, the other reads a gate's batch at a time, so the two take
        // turns at the pace the APNs gate hands out (a 4,096-target batch can hold a small pool
        // for a second).
        let mainBatch = plan.androidWindow == nil ? Self.scanBatch : gate.batch
        var main = Part(window: plan.window, scan: scan(kind: nil, excluding: plan.androidWindow == nil ? nil : .fcm, from: plan.resume, batch: mainBatch),
                        resume: plan.resume, gate: gate, inOldWindow: !plan.resume.oldSubmitted.isEmpty)
        var fcm: Part?
        if let window = plan.androidWindow, let androidGate = android?.handOut {
            fcm = Part(window: window, scan: scan(kind: .fcm, excluding: nil, from: plan.androidResume, batch: androidGate.batch),
                       resume: plan.androidResume, gate: androidGate, inOldWindow: !plan.androidResume.oldSubmitted.isEmpty)
        }
        // The first turn is short: the first FCM batch then goes out right after the event's
        // first few APNs starts, not after a whole gate's batch of them.
        if fcm != nil { main.scan.batchSize = Self.firstTurn }
        pending.reserveCapacity(Self.chunk)
        while stopped == nil {
            if !main.done {
                try step(&main, plan: plan, groupPushes: groupPushes, counts: &counts)
                main.scan.batchSize = mainBatch
            }
            if var part = fcm, !part.done, main.done || hasRoom(part) {
                try step(&part, plan: plan, groupPushes: groupPushes, counts: &counts)
                fcm = part
            }
            if main.done && fcm?.done ?? true { break }
        }
    }

    /// Whether an FCM batch fits now without waiting: in the FCM pool's gate and in its window.
    private func hasRoom(_ part: Part) -> Bool {
        part.gate.limit - part.gate.count >= part.gate.batch && sink.hasRoom(in: part.window, entries: part.gate.batch)
    }

    func add(_ target: ChunkTarget, part: Part) throws(FanoutError) {
        pending.append(target)
        if target.group != nil { pendingSends += 1 }
        // A chunk sends at most the gate's batch: `flush` takes the gate's room for all of its
        // sends at once. The very first push goes out at once: an earthquake warning's first
        // phone should not wait for a chunk to fill.
        if pending.count >= Self.chunk || pendingSends >= part.gate.batch || (!sentAny && target.group != nil) {
            try flush(window: part.window, gate: part.gate)
        }
    }

    /// Hands the pending targets to the window and their pushes to the pool: waits for room in
    /// the window and in the pool's gate, records the scan position and every window's new
    /// answers first (so a crash can hide neither a sent push nor an answered one), then sends.
    /// While it waits, its answers are recorded as they come (every `nudgeEvery`, a second, or
    /// `checkpointAnswers`), each checkpoint giving their room in the gate back: what the pool's
    /// runs have handed out and not recorded as answered never exceeds the gate, so neither do the
    /// unknowns after a kill.
    func flush(window: Int, gate: HandOutGate) throws(FanoutError) {
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
        var handed = FanoutSink.Answers()
        if !cancelled, admitted {
            jobs.reserveCapacity(sends)
            handed = sink.handOut(pending, window: window, into: &jobs)
            resentOffWire.formUnion(pendingOffWire)
        }
        if admitted, jobs.count < sends { gate.release(sends - jobs.count) }
        pending.removeAll(keepingCapacity: true)
        pendingOffWire.removeAll(keepingCapacity: true)
        pendingSends = 0
        // The chunk's own window (and every window with new answers) recorded before it goes out.
        try write(handed)
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
        for progress in progress(answers.checkpoints) { try write(progress) }
        sink.release(answers)
    }

    func checkShouldStop() {
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
}

import APNs
import IO
import Sender

/// Receives every push's outcome (on the pool's loop threads) and keeps the fan-out's books: the
/// report, the scan windows a checkpoint reads, the tokens to prune, the circuit breaker, the
/// room its answers hold in the pool's gate, and the delivery audit log. One lock, private: the
/// producer (`StartScanner`, `EventRun`) asks through the methods below, each one lock for a
/// whole chunk or step, never one per push.
///
/// Longer than 300 lines on purpose: everything the one lock guards is `private` to this file,
/// so no other file can read a field without the lock (issue 21); split across files, the state
/// would have to become visible to the whole module.
final class FanoutSink: PushOutcomeSink, @unchecked Sendable {
    // @unchecked: every mutable field is guarded by `lock` (the log file by its own FILE lock).
    private let lock = ConditionLock()
    private let slots: [PushSlot]
    private var windows: [ScanWindow]
    /// A pass's two windows when its FCM targets are scanned apart: each one's twin. One record
    /// holds both, so a checkpoint of one takes the other's too.
    private let twins: [Int: Int]
    private var report = FanoutReport()
    /// Pushes handed to the pool and not yet answered.
    private var inFlight = 0
    /// Wake the producer when `inFlight` falls to this.
    private var wakeAt = 0
    private var prunes: [PruneCandidate] = []
    /// Phones an update or end reached since the ledger last took them (`UpdateLedger.hash`).
    private var updateAnswers: [UInt64] = []
    /// `BadDeviceToken` / `DeviceTokenNotForTopic` (FCM: `SENDER_ID_MISMATCH`, a refused token)
    /// answers, held until the breaker has judged their group, per breaker (`breaker(group:kind:)`).
    private var heldPrunes: [[PruneCandidate]]
    /// Per breaker — a group's APNs pushes and its FCM messages apart, since a wrong Firebase
    /// project says nothing about APNs — answers and bad-token answers among its first
    /// `breakerSample` answers.
    private var breakerAnswers: [Int]
    private var breakerBad: [Int]
    /// Why the event must stop (an APNs breaker tripped), if it must.
    private var tripped: StopReason?
    /// Why Android stopped while the event goes on (an FCM breaker, the FCM pool halted).
    private var androidTripped: StopReason?
    /// When the event's first run began (ms): FCM's refusals carry no timestamp, so a token
    /// registered again after this stays.
    private let eventStarted: UInt64
    /// When the first push (or broadcast) was handed out, and the first and last answers.
    private var firstPush: MonotonicInstant?
    private var firstAnswer: MonotonicInstant?
    private var lastAnswer: MonotonicInstant?
    /// This event's latencies per lane with a pool (the FCM lane's only with the FCM pool: each
    /// histogram is 400 KB) and back-off retries (the pool's own counters mix every event on it).
    /// Made here, on the run's thread, not at a lane's first answer on a loop thread: freed there,
    /// 400 KB blocks stayed in each loop thread's malloc arena (the daemon grew 6 MB over 200 events).
    private var latencies: PerLane<LatencyHistogram?>
    private var retries = 0
    private let log: AuditLog?
    private let groupTopics: [String]
    /// The pool's gate (`HandOutGate`). An answered start or fallback (the pushes a window tracks)
    /// gives its room back only once a checkpoint recording its answer is written
    /// (`takeAnswers`, `handOut`): so the gate bounds, over every run on the pool, what is handed
    /// out and not recorded as answered — what a crash leaves unknown. Android starts scanned
    /// apart count in the FCM pool's gate instead (`androidGate`): an FCM message held by
    /// Google's quota then holds no room an APNs start needs.
    private let gate: HandOutGate
    private let androidGate: HandOutGate?
    /// Answered pushes whose room is not given back yet (not yet in a written checkpoint), per
    /// gate: APNs' (also FCM starts without a gate of their own), the FCM pool's.
    private var unreleased = 0
    private var unreleasedAndroid = 0
    /// Set when the run is over: a late answer gives its room back at once (nothing records it).
    private var detached = false
    /// Every this many unreleased answers, a producer waiting on the gate (this run's or
    /// another's) and this run's own waits are woken, so the answers get recorded and their room
    /// given back without waiting for a timeout. At every multiple, not once: a nudge that comes
    /// while the producer is between two waits is lost, and the next one must follow.
    private let nudgeEvery: Int
    private let nudgeAndroidEvery: Int

    /// Whether a window's answers count in the FCM pool's gate (its slot is an FCM start with a gate of its own).
    private func countsInAndroidGate(_ slot: PushSlot) -> Bool { androidGate != nil && slot.kind == .fcm && slot.window != nil }

    /// The circuit breaker: within a group's first `breakerSample` answers, more than
    /// `breakerFraction` of them being BadDeviceToken/DeviceTokenNotForTopic (and at least
    /// `breakerMinimum`) means a wrong environment or topic, not dead phones.
    static let breakerSample = 1000
    static let breakerFraction = 0.05
    static let breakerMinimum = 10

    init(slots: [PushSlot], windows: [ScanWindow], twins: [Int: Int] = [:], groupTopics: [String], log: AuditLog?, gate: HandOutGate,
         androidGate: HandOutGate? = nil, eventStarted: UInt64) {
        self.slots = slots
        self.eventStarted = eventStarted
        self.gate = gate
        self.androidGate = androidGate
        nudgeEvery = max(1, gate.batch)
        nudgeAndroidEvery = max(1, androidGate?.batch ?? 1)
        self.windows = windows
        self.twins = twins
        self.groupTopics = groupTopics
        self.log = log
        latencies = PerLane { lane in lane == .apns || androidGate != nil ? LatencyHistogram() : nil }
        heldPrunes = Array(repeating: [], count: 2 * groupTopics.count)
        breakerAnswers = Array(repeating: 0, count: 2 * groupTopics.count)
        breakerBad = Array(repeating: 0, count: 2 * groupTopics.count)
    }

    /// The report's `android.stopped`: FCM's wording for its breaker, the pool's message otherwise.
    private static func androidText(_ reason: StopReason) -> String {
        guard case let .circuitBreaker(group, bad, answers) = reason else { return reason.text }
        return "FCM circuit breaker: \(bad) of the first \(answers) FCM answers for group '\(group)' were SENDER_ID_MISMATCH or an invalid registration token; that is a wrong Firebase project or mangled tokens, not dead phones, so Android stopped (iOS went on) and nothing was pruned"
    }

    /// A group's breaker for APNs pushes (even) or FCM messages (odd).
    private static func breaker(_ slot: PushSlot) -> Int { 2 * slot.group + (slot.kind == .fcm ? 1 : 0) }

    // MARK: Answers (the pool's loop threads)

    func pushCompleted(_ push: CompletedPush) {
        let slot = slots[Int(push.id >> PushSlot.sequenceBits)]
        let sequence = push.id & ((1 << PushSlot.sequenceBits) - 1)
        let now = MonotonicInstant.now()
        var releaseNow = false, nudge = false
        let android = countsInAndroidGate(slot)
        // An update's answer, whatever it said, means the phone is not sent this serial again;
        // one that never came (unknown, past the deadline) is sent again by a resumed run.
        let answered = slot.purpose == .update && push.outcome != .unknown && push.outcome != .expired
        let answerHash = answered ? push.token.withBytes { UpdateLedger.hash(Lane(kind: slot.kind), token: $0) } : 0
        lock.withLock {
            inFlight -= 1
            if answered { updateAnswers.append(answerHash) }
            if slot.window != nil {
                if detached {
                    releaseNow = true
                } else if android {
                    unreleasedAndroid += 1
                    if unreleasedAndroid % nudgeAndroidEvery == 0 { nudge = true; lock.broadcast() }
                } else {
                    unreleased += 1
                    if unreleased % nudgeEvery == 0 { nudge = true; lock.broadcast() }
                }
            }
            if firstAnswer == nil { firstAnswer = now }
            lastAnswer = now
            if let window = slot.window { windows[window].answer(sequence) }
            if push.resentAfterUnknown { report.lanes[Lane(kind: slot.kind)].resentAfterUnknown += 1 }
            if let latency = push.latency { latencies[Lane(kind: slot.kind)]?.record(nanoseconds: latency.nanoseconds) }
            retries += push.retries
            record(push, slot: slot)
            if inFlight <= wakeAt { lock.broadcast() }
        }
        let slotGate = android ? androidGate! : gate
        if releaseNow { slotGate.release(1) }
        if nudge { slotGate.nudgeWaiters() }
        log?.write(push, group: groupTopics[slot.group])
    }

    func pushWentOffWire(id: UInt64) { markOffWire(id: id, true) }
    func pushWentBackOnWire(id: UInt64) { markOffWire(id: id, false) }

    /// A push of a window waits off the wire for a resend, or is written again: the window's next
    /// checkpoint says which (one lock per retried push, not per push).
    private func markOffWire(id: UInt64, _ offWire: Bool) {
        guard let window = slots[Int(id >> PushSlot.sequenceBits)].window else { return }
        lock.withLock { windows[window].setOffWire(id & ((1 << PushSlot.sequenceBits) - 1), offWire) }
    }

    /// Counts one outcome (under the lock).
    private func record(_ push: CompletedPush, slot: PushSlot) {
        // The pool says which refusals prune only once the breaker judged the group (APNs'
        // BadDeviceToken / DeviceTokenNotForTopic, FCM's SENDER_ID_MISMATCH or a refused token).
        let isBad = push.prunesBehindBreaker
        let breaker = Self.breaker(slot)
        if breakerAnswers[breaker] < Self.breakerSample {
            breakerAnswers[breaker] += 1
            if isBad { breakerBad[breaker] += 1 }
            judge(breaker: breaker, final: false)
        }
        let fcm = slot.kind == .fcm
        let lane = Lane(kind: slot.kind)
        switch push.outcome {
        case .delivered, .deliveredAfterRetry:
            report.lanes[lane].delivered += 1
        case .tokenDead:
            let reason = push.refusalName ?? "Unregistered"
            report.pruned[reason, default: 0] += 1
            report.lanes[lane].pruned += 1
            let token = push.token.withBytes { Array($0) }
            // A 410 carries the moment APNs learnt the token was dead, and FCM's errors carry none,
            // so for them the event's start stands in: a phone that registered again since keeps
            // its token (the store compares). An APNs bad-token refusal prunes regardless.
            let before = fcm ? eventStarted : push.timestamp.map { UInt64(max(0, $0)) }
            if isBad {
                heldPrunes[breaker].append(PruneCandidate(kind: slot.kind, token: token, registeredBefore: fcm ? before : nil, reason: reason,
                                                          behindBreaker: true))
            } else {
                prunes.append(PruneCandidate(kind: slot.kind, token: token, registeredBefore: before, reason: reason))
            }
        case .unknown:
            report.lanes[lane].unknown += 1
        case .expired:
            report.lanes[lane].expired += 1
        case .failedAfterRetry, .requestBug, .authOrConnectionFailure:
            report.failed[push.refusalName ?? (push.status == 0 ? "connection" : "HTTP \(push.status)"), default: 0] += 1
            report.lanes[lane].failed += 1
        }
    }

    /// Trips `breaker` when its sample says wrong environment, topic or project; releases its
    /// held prunes when the sample is complete (or the group ended, `final`) and clean. An APNs
    /// breaker stops the event; an FCM one stops Android alone. Under the lock.
    private func judge(breaker: Int, final: Bool) {
        let bad = breakerBad[breaker], seen = breakerAnswers[breaker]
        let suspicious = bad >= Self.breakerMinimum && Double(bad) > Self.breakerFraction * Double(max(seen, final ? seen : Self.breakerSample))
        let android = breaker % 2 == 1
        if suspicious {
            let reason = StopReason.circuitBreaker(group: groupTopics[breaker / 2], bad: bad, answers: seen)
            if android { androidTripped = androidTripped ?? reason } else { tripped = tripped ?? reason }
        }
        guard !suspicious, (android ? androidTripped : tripped) == nil, seen >= Self.breakerSample || final else { return }
        prunes.append(contentsOf: heldPrunes[breaker])
        heldPrunes[breaker].removeAll()
    }

    // MARK: The producer's side (the run's thread)

    /// Delivered so far and pushes in flight: the progress line and the delivery curve.
    func progress() -> (delivered: Int, inFlight: Int) {
        lock.withLock { (report.delivered, inFlight) }
    }

    /// Why the breaker stopped the event, if it did.
    func breakerTrip() -> StopReason? {
        lock.withLock { tripped }
    }

    /// Why Android stopped while the event goes on, if it did.
    var androidStopped: StopReason? { lock.withLock { androidTripped } }

    /// Android stops (its pool halted: a refused service account): no more FCM messages this event.
    func stopAndroid(_ reason: StopReason) {
        lock.withLock { androidTripped = androidTripped ?? reason }
    }

    /// Counts pushes the producer hands to the pool.
    func willSend(_ count: Int) {
        lock.withLock { noteSending(count) }
    }

    /// `willSend` under the lock.
    private func noteSending(_ count: Int) {
        guard count > 0 else { return }
        inFlight += count
        if firstPush == nil { firstPush = MonotonicInstant.now() }
    }

    /// Broadcasts are about to go out (they are the event's first pushes when there are any).
    func broadcastsHandedOut(_ count: Int) {
        lock.withLock { if firstPush == nil && count > 0 { firstPush = MonotonicInstant.now() } }
    }

    /// The broadcasts' answers: each is a target, delivered or failed by its reason.
    func recordBroadcasts(_ answers: [ChannelClient.Answer]) {
        lock.withLock {
            // Channels are APNs': their broadcasts are the APNs lane's targets.
            report.broadcasts += answers.count
            for answer in answers {
                if answer.succeeded {
                    report.lanes[.apns].delivered += 1
                } else {
                    report.failed[answer.reason?.name ?? "connection", default: 0] += 1
                    report.lanes[.apns].failed += 1
                }
            }
        }
    }

    /// The update answers since the last call, for the ledger (`UpdateLedger.record`).
    func takeUpdateAnswers() -> [UInt64] {
        lock.withLock {
            defer { updateAnswers.removeAll(keepingCapacity: true) }
            return updateAnswers
        }
    }

    /// What a pass counted itself, per lane, added once per pass (not per target).
    func add(_ counts: PerLane<ScanCounts>) {
        lock.withLock {
            for (lane, counts) in counts.all {
                report.lanes[lane].answeredBeforeRestart += counts.answeredBeforeRestart
                report.lanes[lane].unknown += counts.unknown
                report.lanes[lane].resentAfterUnknown += counts.resentAfterUnknown
                report.lanes[lane].resentAfterBackOff += counts.resentAfterBackOff
                report.lanes[lane].duplicatesAvoided += counts.duplicatesAvoided
                report.lanes[lane].skippedByBudget += counts.skippedByBudget
                report.lanes[lane].expired += counts.expired
                report.lanes[lane].skipped += counts.skipped
            }
        }
    }

    /// What one step of waiting for room found.
    enum Room {
        /// There is room for the chunk: hand it out.
        case ready
        /// There was none; the producer waited up to 200 ms and may checkpoint or stop before
        /// asking again. The window's answers since its last checkpoint, and the breaker.
        case waited(answersSinceCheckpoint: Int, tripped: StopReason?)
    }

    /// Whether `window` has room for `entries` more targets; if not, waits until an answer, or
    /// 200 ms. (Room on the pool is the pool's `HandOutGate`, shared with the other runs on it.)
    func waitForRoom(in window: Int, entries: Int) -> Room {
        lock.withLock {
            guard !windows[window].hasRoom(for: entries) else { return .ready }
            wakeAt = max(0, inFlight - 1)
            lock.wait(until: MonotonicInstant.now() + .milliseconds(200))
            return .waited(answersSinceCheckpoint: windows[window].answersSinceCheckpoint, tripped: tripped)
        }
    }

    /// Waits (at most 200 ms) until fewer than `limit` pushes are in flight; returns whether they
    /// are. Pushes no window tracks (Android updates) use it to keep the pool's queue bounded.
    func waitForInFlight(below limit: Int) -> Bool {
        lock.withLock {
            guard inFlight >= limit else { return true }
            wakeAt = max(0, limit - 1)
            lock.wait(until: MonotonicInstant.now() + .milliseconds(200))
            return inFlight < limit
        }
    }

    /// The window's answers since its last checkpoint, and the breaker (while waiting on the gate).
    func waited(in window: Int) -> Room {
        lock.withLock { .waited(answersSinceCheckpoint: windows[window].answersSinceCheckpoint, tripped: tripped) }
    }

    /// What a producer writes to give the gate back the room of its answers: the checkpoints of
    /// every window with answers its last checkpoint lacks (a group the scan has left may still be
    /// answered: a takeover must not count those unknown), plus `including`'s; and how many answers
    /// they cover — to `release` once they are written.
    struct Answers {
        var checkpoints: [(window: Int, checkpoint: ScanWindow.Checkpoint)] = []
        var released = 0
        /// The same for the FCM pool's gate.
        var androidReleased = 0
    }

    /// Gives back the room of answers whose checkpoints are written (or of pushes not sent).
    func release(_ answers: Answers) {
        gate.release(answers.released)
        androidGate?.release(answers.androidReleased)
    }

    /// The checkpoints to write and the answers they cover (see `Answers`). One lock.
    func takeAnswers(including: [Int] = []) -> Answers {
        lock.withLock { takeAnswersLocked(including: including) }
    }

    private func takeAnswersLocked(including: [Int]) -> Answers {
        var answers = Answers()
        for index in windows.indices where windows[index].answersSinceCheckpoint > 0 || including.contains(index) {
            guard !answers.checkpoints.contains(where: { $0.window == index }) else { continue }  // taken as a twin
            answers.checkpoints.append((index, windows[index].takeCheckpoint()))
            // A twin's checkpoint goes with it: the two are one record.
            if let twin = twins[index], !answers.checkpoints.contains(where: { $0.window == twin }) {
                answers.checkpoints.append((twin, windows[twin].takeCheckpoint()))
            }
        }
        answers.released = unreleased
        answers.androidReleased = unreleasedAndroid
        unreleased = 0
        unreleasedAndroid = 0
        return answers
    }

    /// The run is over: the room of every answer not given back yet goes back now, and a late
    /// answer's at once. Idempotent.
    func detachFromGate() {
        let counts = lock.withLock { () -> (Int, Int) in
            detached = true
            defer { unreleased = 0; unreleasedAndroid = 0 }
            return (unreleased, unreleasedAndroid)
        }
        gate.release(counts.0)
        androidGate?.release(counts.1)
    }

    deinit {
        // A run that ended by an error before `detachFromGate` (every answer has come by now).
        gate.release(unreleased)
        androidGate?.release(unreleasedAndroid)
    }

    /// Enters a chunk's targets into `window` and appends the pushes among them to `jobs`,
    /// counted in flight; returns the checkpoints to write before they go out: the window's (and
    /// its twin's), which cover them, and every other window's new answers (`takeAnswers`). One
    /// lock for the whole chunk.
    func handOut(_ chunk: [ChunkTarget], window: Int, into jobs: inout [PushJob]) -> Answers {
        lock.withLock {
            for target in chunk {
                let sequence = windows[window].append(target.entry)
                if let group = target.group {
                    if slots[target.slot].purpose == .fallback { report.fallbackAlerts += 1 }
                    jobs.append(PushJob(token: target.entry.token, group: group, id: PushSlot.jobID(slot: target.slot, sequence: sequence)))
                }
            }
            noteSending(jobs.count)
            return takeAnswersLocked(including: [window])
        }
    }

    /// The windows' final checkpoints (each the whole set), read together.
    func finalCheckpoints(of windows: [Int]) -> [Int: ScanWindow.Checkpoint] {
        lock.withLock { Dictionary(uniqueKeysWithValues: windows.map { ($0, self.windows[$0].takeCheckpoint(final: true)) }) }
    }

    /// Whether `window` has room for `entries` more targets now (no wait).
    func hasRoom(in window: Int, entries: Int) -> Bool {
        lock.withLock { windows[window].hasRoom(for: entries) }
    }

    // MARK: The end

    /// Waits until every push handed out has its answer, or `timeout` passes; `tick` runs about
    /// every 200 ms meanwhile (outside the lock). Returns whether everything was answered.
    @discardableResult
    func waitUntilSettled(timeout: Duration, tick: () -> Void) -> Bool {
        let end = MonotonicInstant.now() + timeout
        while true {
            let settled = lock.withLock { () -> Bool in
                wakeAt = 0
                if inFlight > 0 { lock.wait(until: min(end, MonotonicInstant.now() + .milliseconds(200))) }
                return inFlight == 0
            }
            if settled { return true }
            if MonotonicInstant.now() >= end { return false }
            tick()
        }
    }

    /// At the end: judges every group on what it got and counts what the breaker kept; returns
    /// the breaker's reason and the event's retries and latencies.
    func finishBreaker() -> (tripped: StopReason?, retries: Int, latencies: PerLane<LatencyHistogram?>) {
        let result = lock.withLock { () -> (tripped: StopReason?, retries: Int, latencies: PerLane<LatencyHistogram?>) in
            for breaker in breakerAnswers.indices { judge(breaker: breaker, final: true) }
            // A tripped breaker withholds every bad-token prune of its provider, also those of
            // groups judged clean: the sender, not the phones, was wrong.
            for (lane, stop) in [(Lane.apns, tripped), (Lane.fcm, androidTripped)] where stop != nil {
                let ofLane = { (prune: PruneCandidate) in prune.behindBreaker && Lane(kind: prune.kind) == lane }
                report.lanes[lane].pruneWithheld += heldPrunes.reduce(0) { $0 + $1.filter(ofLane).count } + prunes.filter(ofLane).count
                prunes.removeAll(where: ofLane)
                heldPrunes = heldPrunes.map { $0.filter { !ofLane($0) } }
            }
            report.androidStopped = androidTripped.map(Self.androidText)
            return (tripped, retries, latencies)
        }
        log?.flush()
        return result
    }

    /// The counts so far and the tokens to prune (after `finishBreaker`).
    func finalReport() -> (report: FanoutReport, prunes: [PruneCandidate]) {
        lock.withLock { (report, prunes) }
    }

    /// When the first push went out, and the first and last answers came.
    func timing() -> (firstPush: MonotonicInstant?, firstAnswer: MonotonicInstant?, lastAnswer: MonotonicInstant?) {
        lock.withLock { (firstPush, firstAnswer, lastAnswer) }
    }
}

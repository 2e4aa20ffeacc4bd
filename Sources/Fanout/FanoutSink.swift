#if canImport(Glibc)
import Glibc
#endif
import APNs
import IO
import JSONCore
import Sender

/// What a push of a fan-out was, found from its job id (slot << 40 | sequence in its window).
struct PushSlot: Sendable {
    enum Purpose: Sendable { case start, fallback, update }
    let purpose: Purpose
    /// The event group (index into `FanoutEvent.groups`).
    let group: Int
    /// The scan window tracking it (starts and fallbacks; nil for updates and ends).
    let window: Int?
    let kind: TokenKind

    static let sequenceBits: UInt64 = 40
    static func jobID(slot: Int, sequence: UInt64) -> UInt64 { UInt64(slot) << sequenceBits | sequence }
}

/// A token APNs called dead, to be removed from the store once the event has ended.
struct PruneCandidate: Sendable {
    let kind: TokenKind
    let token: [UInt8]
    /// A 410's timestamp (ms): removed only if registered before it. Nil: removed regardless.
    let registeredBefore: UInt64?
    let reason: String
}

/// Receives every push's outcome (on the pool's loop threads) and keeps the fan-out's books: the
/// report, the scan windows a checkpoint reads, the tokens to prune, the circuit breaker, and the
/// delivery audit log. One lock; the producer waits on it for room in flight.
final class FanoutSink: PushOutcomeSink, @unchecked Sendable {
    // @unchecked: every mutable field is guarded by `lock` (the log file by its own FILE lock).
    let lock = ConditionLock()
    let slots: [PushSlot]
    var windows: [ScanWindow]
    var report = FanoutReport()
    /// Pushes handed to the pool and not yet answered.
    var inFlight = 0
    var answers = 0
    /// Wake the producer when `inFlight` falls to this.
    var wakeAt = 0
    var prunes: [PruneCandidate] = []
    /// `BadDeviceToken` / `DeviceTokenNotForTopic` answers, held until the breaker has judged their group.
    var heldPrunes: [[PruneCandidate]]
    /// Per group: answers and bad-token answers among its first `breakerSample` answers.
    var breakerAnswers: [Int]
    var breakerBad: [Int]
    /// Why the event must stop (the breaker tripped), if it must.
    var tripped: StopReason?
    /// When the first push (or broadcast) was handed out, and answered.
    var firstPush: MonotonicInstant?
    var firstAnswer: MonotonicInstant?
    /// This event's latencies and back-off retries (the pool's own counters mix every event on it).
    var latency = LatencyHistogram()
    var retries = 0
    var lastAnswer: MonotonicInstant?
    private let log: AuditLog?
    private let groupTopics: [String]

    /// The circuit breaker: within a group's first `breakerSample` answers, more than
    /// `breakerFraction` of them being BadDeviceToken/DeviceTokenNotForTopic (and at least
    /// `breakerMinimum`) means a wrong environment or topic, not dead phones.
    static let breakerSample = 1000
    static let breakerFraction = 0.05
    static let breakerMinimum = 10

    init(slots: [PushSlot], windows: [ScanWindow], groupTopics: [String], log: AuditLog?) {
        self.slots = slots
        self.windows = windows
        self.groupTopics = groupTopics
        self.log = log
        heldPrunes = Array(repeating: [], count: groupTopics.count)
        breakerAnswers = Array(repeating: 0, count: groupTopics.count)
        breakerBad = Array(repeating: 0, count: groupTopics.count)
    }

    func pushCompleted(_ push: CompletedPush) {
        let slot = slots[Int(push.id >> PushSlot.sequenceBits)]
        let sequence = push.id & ((1 << PushSlot.sequenceBits) - 1)
        let now = MonotonicInstant.now()
        lock.withLock {
            inFlight -= 1
            answers += 1
            if firstAnswer == nil { firstAnswer = now }
            lastAnswer = now
            if let window = slot.window { windows[window].answer(sequence) }
            if push.resentAfterUnknown { report.resentAfterUnknown += 1 }
            if let latency = push.latency { self.latency.record(nanoseconds: latency.nanoseconds) }
            retries += push.retries
            record(push, slot: slot)
            if inFlight <= wakeAt { lock.broadcast() }
        }
        log?.write(push, group: groupTopics[slot.group])
    }

    /// Counts one outcome (under the lock).
    private func record(_ push: CompletedPush, slot: PushSlot) {
        let isBad = push.reason == .badDeviceToken || push.reason == .deviceTokenNotForTopic
        if breakerAnswers[slot.group] < Self.breakerSample {
            breakerAnswers[slot.group] += 1
            if isBad { breakerBad[slot.group] += 1 }
            judge(group: slot.group, final: false)
        }
        switch push.outcome {
        case .delivered, .deliveredAfterRetry:
            report.delivered += 1
        case .tokenDead:
            let reason = push.reason?.name ?? "Unregistered"
            report.pruned[reason, default: 0] += 1
            let token = push.token.withBytes { Array($0) }
            if isBad {
                heldPrunes[slot.group].append(PruneCandidate(kind: slot.kind, token: token, registeredBefore: nil, reason: reason))
            } else {
                // A 410 carries the moment APNs learnt the token was dead: a phone that registered
                // again since keeps its token (the store compares).
                let before = push.timestamp.map { UInt64(max(0, $0)) }
                prunes.append(PruneCandidate(kind: slot.kind, token: token, registeredBefore: before, reason: reason))
            }
        case .unknown:
            report.unknown += 1
        case .expired:
            report.expired += 1
        case .failedAfterRetry, .requestBug, .authOrConnectionFailure:
            report.failed[push.reason?.name ?? (push.status == 0 ? "connection" : "HTTP \(push.status)"), default: 0] += 1
        }
    }

    /// Trips the breaker for `group` when its sample says wrong environment or topic; releases its
    /// held prunes when the sample is complete (or the group ended, `final`) and clean.
    func judge(group: Int, final: Bool) {
        let bad = breakerBad[group], seen = breakerAnswers[group]
        let suspicious = bad >= Self.breakerMinimum && Double(bad) > Self.breakerFraction * Double(max(seen, final ? seen : Self.breakerSample))
        if suspicious && tripped == nil {
            tripped = .circuitBreaker(group: groupTopics[group], bad: bad, answers: seen)
        }
        guard tripped == nil, seen >= Self.breakerSample || final else { return }
        prunes.append(contentsOf: heldPrunes[group])
        heldPrunes[group].removeAll()
    }

    /// At the end: judge every group on what it got, and count what the breaker kept.
    func finishBreaker() {
        lock.withLock {
            for group in breakerAnswers.indices { judge(group: group, final: true) }
            if tripped != nil {
                report.pruneWithheld = heldPrunes.reduce(0) { $0 + $1.count } + prunes.filter { $0.registeredBefore == nil }.count
                prunes.removeAll { $0.registeredBefore == nil }
                heldPrunes = heldPrunes.map { _ in [] }
            }
        }
        log?.flush()
    }

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

    /// Counts pushes the producer hands to the pool.
    func willSend(_ count: Int) {
        lock.withLock { noteSending(count) }
    }

    /// `willSend` under the lock.
    func noteSending(_ count: Int) {
        guard count > 0 else { return }
        inFlight += count
        if firstPush == nil { firstPush = MonotonicInstant.now() }
    }
}

/// `--log FILE`: one JSON line per push, the delivery audit: the token's last 8 characters, the
/// group, APNs' ids, status, reason and outcome. Never the whole token.
final class AuditLog: @unchecked Sendable {
    // @unchecked: each line is one fwrite, which holds the FILE's lock.
    private let file: UnsafeMutablePointer<FILE>

    init(path: String) throws(FanoutError) {
        guard let file = fopen(path, "a") else {
            throw FanoutError(.store, "--log \(path): \(String(cString: strerror(errno)))")
        }
        self.file = file
    }

    deinit { fclose(file) }

    func write(_ push: CompletedPush, group: String) {
        var writer = JSONWriter(reservingCapacity: 256)
        writer.beginObject()
        writer.key("token"); writer.string(String(push.token.hex.suffix(8)))
        writer.key("group"); writer.string(group)
        writer.key("apnsId"); if let id = push.apnsID { writer.string(id) } else { writer.null() }
        writer.key("apnsUniqueId"); if let id = push.uniqueID { writer.string(id) } else { writer.null() }
        writer.key("status"); writer.int(push.status)
        writer.key("reason"); if let reason = push.reason { writer.string(reason.name) } else { writer.null() }
        writer.key("outcome"); writer.string(push.outcome.description)
        writer.endObject()
        var bytes = writer.bytes
        bytes.append(UInt8(ascii: "\n"))
        _ = bytes.withUnsafeBufferPointer { fwrite($0.baseAddress, 1, $0.count, file) }
    }

    func flush() { fflush(file) }
}

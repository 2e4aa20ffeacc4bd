import Sender
import TokenStore
import Vocabulary

/// The targets of one topic scan between the last checkpointed position and the scan's head, in
/// scan order: which are still waiting for APNs and which have their answer. What a checkpoint
/// writes (`StartProgress`) is read from here: the position before the first unanswered target
/// (`completed`), the last target handed out (`submitted`), and the answered ones in between.
/// Targets the scan skips (a duplicate, over the budget, answered before a restart) enter already
/// answered, so the completed position moves past them.
///
/// A ring of fixed capacity: entries are values (the token inline), so a fan-out of a million
/// allocates nothing per target. Only the fan-out's lock guards it.
struct ScanWindow {
    struct Entry {
        var token = DeviceToken()
        var minLevel: UInt8 = 0
        /// The kind byte as the topic index stores it (with the broadcast flag).
        var kindByte: UInt8 = 0
        var hash: UInt64 = 0
        var answered = false
        /// Answered "not processed, send again" and waiting for the resend, on no wire.
        var offWire = false
    }

    let topic: String
    private var ring: [Entry]
    private let mask: Int
    /// Sequence numbers: `base` is the first unanswered entry (== `head` when all are answered).
    private(set) var base: UInt64 = 0
    private(set) var head: UInt64 = 0
    /// Position of the last entry before `base` (TopicWatermark bytes; empty: none yet).
    private(set) var completed: [UInt8]
    /// Position of the last entry handed out (empty: none yet).
    private(set) var submitted: [UInt8]
    /// Answers since the last checkpoint (the producer checkpoints every second or 1,000 answers).
    private(set) var answersSinceCheckpoint = 0
    /// Sequence numbers answered (or entered answered) since the last checkpoint: of these, the
    /// next one writes as its segment (`AnswerLog`) the hashes still after `completed` — most
    /// answers come in order, and `completed` covers those without a hash.
    private var newlyAnswered: [UInt64] = []
    /// Answered entries between `base` and `head`: what a folded segment holds.
    private var answeredInWindow = 0
    /// Unanswered entries off the wire: a checkpoint that neither folds nor has any to list
    /// reads only `newlyAnswered`, not the window.
    private var offWireCount = 0
    /// The answer log (nil: every checkpoint carries the whole set, e.g. a topic two passes share).
    private var log: (next: UInt32, firstKept: UInt32, keptHashes: Int)?
    /// A checkpoint folds the kept segments into one once they hold this many hashes and more
    /// than twice the window's answered entries: each answer is then written about 1.5 times,
    /// not once per chunk while it waits in the window.
    static let foldAtLeast = 4096

    /// `firstSegment`: where the answer log numbers on from (nil: no log, the whole set each time).
    init(topic: String, capacity: Int, completed: [UInt8], firstSegment: UInt32? = nil) {
        self.topic = topic
        var size = 1024
        while size < capacity { size <<= 1 }
        ring = Array(repeating: Entry(), count: size)
        mask = size - 1
        self.completed = completed
        submitted = completed
        // The first checkpoint folds: it drops whatever an earlier run left (its answers are the
        // plan's to add back, `StartScanner.progress(of:)`).
        log = firstSegment.map { (next: $0, firstKept: $0, keptHashes: Int.max / 2) }
    }

    var capacity: Int { ring.count }
    var isFull: Bool { head - base >= UInt64(ring.count) }
    var isSettled: Bool { base == head }

    /// Adds the next target of the scan; returns its sequence number.
    mutating func append(_ entry: Entry) -> UInt64 {
        precondition(!isFull, "ScanWindow overflow")
        let sequence = head
        ring[Int(sequence) & mask] = entry
        head += 1
        submitted = Self.position(of: entry)
        if entry.answered {
            noteAnswered(sequence)
            if sequence == base { advance() }
        }
        return sequence
    }

    private mutating func noteAnswered(_ sequence: UInt64) {
        answeredInWindow += 1
        if log != nil { newlyAnswered.append(sequence) }
    }

    /// Records the answer of target `sequence`.
    mutating func answer(_ sequence: UInt64) {
        guard sequence >= base, sequence < head, !ring[Int(sequence) & mask].answered else { return }
        if ring[Int(sequence) & mask].offWire { offWireCount -= 1 }
        ring[Int(sequence) & mask].answered = true
        answersSinceCheckpoint += 1
        noteAnswered(sequence)
        if sequence == base { advance() }
    }

    /// Records that target `sequence` went off the wire (waits for a back-off resend) or back on
    /// it. Both count toward the next checkpoint like an answer: a crash while it waits should
    /// find it recorded, so the run that resumes sends it; and once it is written again, the
    /// sooner a checkpoint says so, the smaller the chance that a resumed run sends it a second time.
    mutating func setOffWire(_ sequence: UInt64, _ offWire: Bool) {
        guard sequence >= base, sequence < head, !ring[Int(sequence) & mask].answered, ring[Int(sequence) & mask].offWire != offWire else { return }
        ring[Int(sequence) & mask].offWire = offWire
        offWireCount += offWire ? 1 : -1
        answersSinceCheckpoint += 1
    }

    private mutating func advance() {
        var last: Int?
        while base < head, ring[Int(base) & mask].answered {
            last = Int(base) & mask
            base += 1
            answeredInWindow -= 1
        }
        if let last { completed = Self.position(of: ring[last]) }
    }

    /// What a checkpoint records of the window, read in one go under the fan-out's lock.
    struct Checkpoint {
        var completed: [UInt8]
        var submitted: [UInt8]
        /// The answers it writes: with `answerLog`, those since the previous checkpoint (or, when
        /// it folds, every answer after `completed`); without, every answer after `completed`.
        var answered: [UInt64]
        var answerLog: AnswerLog?
        /// Unanswered targets waiting off the wire for a back-off resend.
        var offWire: [UInt64]
        var isSettled: Bool

        /// Whether it drops every earlier segment (its answers are the whole set).
        var isWhole: Bool { answerLog.map { $0.segment == $0.firstKept } ?? true }
    }

    /// The window as a checkpoint records it; restarts the count of answers since one. `final`:
    /// the whole set without a log (a run's last record of a pass it did not finish).
    mutating func takeCheckpoint(final: Bool = false) -> Checkpoint {
        answersSinceCheckpoint = 0
        var answered: [UInt64] = [], offWire: [UInt64] = []
        var answerLog: AnswerLog?
        let whole: Bool
        if final || log == nil {
            whole = true
            if final { log = nil }
        } else if let current = log, current.keptHashes + newlyAnswered.count >= max(Self.foldAtLeast, 2 * answeredInWindow) {
            whole = true
            answerLog = AnswerLog(segment: current.next, firstKept: current.next)
            log = (current.next + 1, current.next, answeredInWindow)
        } else {
            whole = false
            let current = log!
            answerLog = AnswerLog(segment: current.next, firstKept: current.firstKept)
            for sequence in newlyAnswered where sequence >= base { answered.append(ring[Int(sequence) & mask].hash) }
            if !answered.isEmpty { log = (current.next + 1, current.firstKept, current.keptHashes + answered.count) }
        }
        newlyAnswered.removeAll(keepingCapacity: true)
        var sequence = whole || offWireCount > 0 ? base : head
        while sequence < head {
            let entry = ring[Int(sequence) & mask]
            if entry.answered { if whole { answered.append(entry.hash) } } else if entry.offWire { offWire.append(entry.hash) }
            sequence += 1
        }
        return Checkpoint(completed: completed, submitted: submitted, answered: answered, answerLog: answerLog, offWire: offWire, isSettled: isSettled)
    }

    /// Whether `entries` more targets fit.
    func hasRoom(for entries: Int) -> Bool { capacity - Int(head - base) >= entries }

    /// A target's position in its topic's scan order, as `TopicWatermark.bytes` spells it: token
    /// length, then the index entry (minimum level, kind byte, token). Byte arrays of this form
    /// compare in scan order.
    static func position(of entry: Entry) -> [UInt8] {
        entry.token.withBytes { token in
            var bytes = [UInt8]()
            bytes.reserveCapacity(token.count + 3)
            bytes.append(UInt8(token.count))
            bytes.append(entry.minLevel)
            bytes.append(entry.kindByte)
            bytes.append(contentsOf: token)
            return bytes
        }
    }

    /// Whether position `a` comes at or before `b` in scan order (empty: before everything).
    static func precedesOrEquals(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        !b.lexicographicallyPrecedes(a)
    }
}

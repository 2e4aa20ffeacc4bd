import Sender
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

    init(topic: String, capacity: Int, completed: [UInt8]) {
        self.topic = topic
        var size = 1024
        while size < capacity { size <<= 1 }
        ring = Array(repeating: Entry(), count: size)
        mask = size - 1
        self.completed = completed
        submitted = completed
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
        if entry.answered && sequence == base { advance() }
        return sequence
    }

    /// Records the answer of target `sequence`.
    mutating func answer(_ sequence: UInt64) {
        guard sequence >= base, sequence < head else { return }
        ring[Int(sequence) & mask].answered = true
        answersSinceCheckpoint += 1
        if sequence == base { advance() }
    }

    /// Records that target `sequence` went off the wire (waits for a back-off resend) or back on
    /// it. Both count toward the next checkpoint like an answer: a crash while it waits should
    /// find it recorded, so the run that resumes sends it; and once it is written again, the
    /// sooner a checkpoint says so, the smaller the chance that a resumed run sends it a second time.
    mutating func setOffWire(_ sequence: UInt64, _ offWire: Bool) {
        guard sequence >= base, sequence < head, ring[Int(sequence) & mask].offWire != offWire else { return }
        ring[Int(sequence) & mask].offWire = offWire
        answersSinceCheckpoint += 1
    }

    private mutating func advance() {
        var last: Int?
        while base < head, ring[Int(base) & mask].answered {
            last = Int(base) & mask
            base += 1
        }
        if let last { completed = Self.position(of: ring[last]) }
    }

    /// What a checkpoint records of the window, read in one go under the fan-out's lock.
    struct Checkpoint {
        var completed: [UInt8]
        var submitted: [UInt8]
        var answered: [UInt64]
        /// Unanswered targets waiting off the wire for a back-off resend.
        var offWire: [UInt64]
        var isSettled: Bool
    }

    /// The window as a checkpoint records it; restarts the count of answers since one.
    mutating func takeCheckpoint() -> Checkpoint {
        answersSinceCheckpoint = 0
        var answered: [UInt64] = [], offWire: [UInt64] = []
        var sequence = base
        while sequence < head {
            let entry = ring[Int(sequence) & mask]
            if entry.answered { answered.append(entry.hash) } else if entry.offWire { offWire.append(entry.hash) }
            sequence += 1
        }
        return Checkpoint(completed: completed, submitted: submitted, answered: answered, offWire: offWire, isSettled: isSettled)
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

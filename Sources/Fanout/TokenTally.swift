import APNs

/// What a fan-out knows about each target token while it runs: whether this event has handled it
/// (a start went out, or was already acknowledged before a restart) and how many starts other
/// recent events sent it (the push-to-start budget). Keyed by `TokenTally.hash`.
///
/// Sized once, for the targets the run can meet (`expecting`), so it never grows mid-run (a
/// doubling hash table held both halves at once: 10M phones cost 300 MB before, issue 25): one
/// 8-byte slot per `1 / maximumLoad` targets — a hash with the handled flag in its top bit — in
/// one flat array, about 10 bytes a target; the budget's counts, when a run needs them, in a
/// second array of a byte a slot. A run whose every target comes once (one pass over one topic,
/// nothing handled by an earlier serial in another topic: a topic's index holds a token once per
/// kind) remembers nothing at all (`remembering: false`): its memory stays flat at any size.
///
/// A 63-bit hash stands in for the token: two of a million distinct tokens share one with a
/// probability of about 5 in 100 million per event (n²/2⁶⁴; 5 in a million at 10M), and such a
/// pair would see one of the two skipped. That bound is stated, not hidden.
struct TokenTally {
    private var slots: [UInt64]
    private var recent: [UInt8] = []
    private(set) var count = 0
    private let remembering: Bool

    /// Bytes its tables hold (what a run's heap pays for it).
    var memoryBytes: Int { slots.count * 8 + recent.count }

    /// Flag bit: handled by this event. The rest of the slot is the hash (0: an empty slot).
    private static let handledBit: UInt64 = 1 << 63
    /// At most this full before it grows (linear probing: 3 probes on average for a miss).
    static let maximumLoad = 0.8

    /// A tally for about `expecting` tokens; `remembering: false` keeps nothing (see above).
    init(expecting: Int = 0, remembering: Bool = true) {
        self.remembering = remembering
        slots = Array(repeating: 0, count: remembering ? Self.size(for: expecting) : 0)
    }

    private static func size(for count: Int) -> Int { max(64, Int((Double(count) / maximumLoad).rounded(.up)) + 1) }

    /// A well-mixed 64-bit hash of a token of `kind` (never 0: 0 marks an empty slot). Stable
    /// across processes and releases, because checkpoints store it.
    static func hash(kind: UInt8, token: UnsafeRawBufferPointer) -> UInt64 {
        var h: UInt64 = 0x9E37_79B9_7F4A_7C15 ^ UInt64(kind) &* 0xFF51_AFD7_ED55_8CCD ^ UInt64(token.count)
        var index = 0
        while index + 8 <= token.count {
            var word: UInt64 = 0
            for offset in 0..<8 { word |= UInt64(token[index + offset]) << (8 * UInt64(offset)) }
            h = mix(h ^ word)
            index += 8
        }
        var tail: UInt64 = 0
        var shift: UInt64 = 0
        while index < token.count { tail |= UInt64(token[index]) << shift; shift += 8; index += 1 }
        h = mix(h ^ tail)
        return h == 0 ? 1 : h
    }

    /// splitmix64's finaliser.
    @inline(__always)
    private static func mix(_ value: UInt64) -> UInt64 {
        var z = value &+ 0x9E37_79B9_7F4A_7C15
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// The hash as a slot keeps it: without the flag bit, never 0.
    @inline(__always)
    private static func key(_ hash: UInt64) -> UInt64 {
        let key = hash & ~handledBit
        return key == 0 ? 1 : key
    }

    /// Whether this event handled the token.
    func isHandled(_ hash: UInt64) -> Bool {
        guard let slot = find(Self.key(hash)) else { return false }
        return slots[slot] & Self.handledBit != 0
    }

    /// Starts other recent events sent this token.
    func recentStarts(_ hash: UInt64) -> Int {
        guard !recent.isEmpty, let slot = find(Self.key(hash)) else { return 0 }
        return Int(recent[slot])
    }

    /// Marks the token handled by this event; false when it already was.
    @discardableResult
    mutating func markHandled(_ hash: UInt64) -> Bool {
        guard remembering else { return true }
        let slot = insert(Self.key(hash))
        if slots[slot] & Self.handledBit != 0 { return false }
        slots[slot] |= Self.handledBit
        return true
    }

    /// Counts one more start of another recent event (saturating).
    mutating func countRecentStart(_ hash: UInt64) {
        guard remembering else { return }
        if recent.isEmpty { recent = Array(repeating: 0, count: slots.count) }
        let slot = insert(Self.key(hash))
        if recent[slot] < 0xFF { recent[slot] += 1 }
    }

    /// The home slot of `key`: its high bits scaled to the table (the table's size is no power of two).
    @inline(__always)
    private func home(_ key: UInt64) -> Int { Int(truncatingIfNeeded: (key &<< 1).multipliedFullWidth(by: UInt64(slots.count)).high) }

    private func find(_ key: UInt64) -> Int? {
        guard !slots.isEmpty else { return nil }
        var slot = home(key)
        while true {
            let stored = slots[slot] & ~Self.handledBit
            if stored == key { return slot }
            if stored == 0 { return nil }
            slot += 1
            if slot == slots.count { slot = 0 }
        }
    }

    private mutating func insert(_ key: UInt64) -> Int {
        if Double(count + 1) > Double(slots.count) * Self.maximumLoad { grow() }
        var slot = home(key)
        while true {
            let stored = slots[slot] & ~Self.handledBit
            if stored == key { return slot }
            if stored == 0 {
                slots[slot] = key
                count += 1
                return slot
            }
            slot += 1
            if slot == slots.count { slot = 0 }
        }
    }

    /// Only when the run met more tokens than it expected (the expectation is an upper bound from
    /// the store's topic counts; a registration racing the run can pass it): half again as large.
    private mutating func grow() {
        let oldSlots = slots, oldRecent = recent
        slots = Array(repeating: 0, count: Self.size(for: count * 3 / 2))
        recent = oldRecent.isEmpty ? [] : Array(repeating: 0, count: slots.count)
        count = 0
        for (index, stored) in oldSlots.enumerated() where stored != 0 {
            let slot = insert(stored & ~Self.handledBit)
            slots[slot] |= stored & Self.handledBit
            if !oldRecent.isEmpty { recent[slot] = oldRecent[index] }
        }
    }
}

import APNs

/// What a fan-out knows about each target token while it runs: whether this event has handled it
/// (a start went out, or was already acknowledged before a restart) and how many starts other
/// recent events sent it (the push-to-start budget). Keyed by `TokenTally.hash`, in an
/// open-addressing table of two flat arrays: 9 bytes a slot, no allocation per token, a million
/// targets in about 19 MB.
///
/// A 64-bit hash stands in for the token: two of a million distinct tokens share one with a
/// probability of about 3 in 100 million per event (n²/2⁶⁵), and such a pair would see one of the
/// two skipped. That bound is stated, not hidden.
struct TokenTally {
    private var keys: [UInt64]
    private var values: [UInt8]
    private var mask: Int
    private(set) var count = 0

    /// Flag bit: handled by this event.
    private static let handledBit: UInt8 = 0x80

    init(capacity: Int = 1 << 12) {
        var size = 16
        while size < capacity * 2 { size <<= 1 }
        keys = Array(repeating: 0, count: size)
        values = Array(repeating: 0, count: size)
        mask = size - 1
    }

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

    /// Whether this event handled the token.
    func isHandled(_ hash: UInt64) -> Bool {
        guard let slot = find(hash) else { return false }
        return values[slot] & Self.handledBit != 0
    }

    /// Starts other recent events sent this token.
    func recentStarts(_ hash: UInt64) -> Int {
        guard let slot = find(hash) else { return 0 }
        return Int(values[slot] & ~Self.handledBit)
    }

    /// Marks the token handled by this event; false when it already was.
    @discardableResult
    mutating func markHandled(_ hash: UInt64) -> Bool {
        let slot = insert(hash)
        if values[slot] & Self.handledBit != 0 { return false }
        values[slot] |= Self.handledBit
        return true
    }

    /// Counts one more start of another recent event (saturating).
    mutating func countRecentStart(_ hash: UInt64) {
        let slot = insert(hash)
        if values[slot] & ~Self.handledBit < 0x7F { values[slot] += 1 }
    }

    private func find(_ hash: UInt64) -> Int? {
        var slot = Int(truncatingIfNeeded: hash) & mask
        while true {
            let key = keys[slot]
            if key == hash { return slot }
            if key == 0 { return nil }
            slot = (slot + 1) & mask
        }
    }

    private mutating func insert(_ hash: UInt64) -> Int {
        if (count + 1) * 2 > keys.count { grow() }
        var slot = Int(truncatingIfNeeded: hash) & mask
        while true {
            let key = keys[slot]
            if key == hash { return slot }
            if key == 0 {
                keys[slot] = hash
                count += 1
                return slot
            }
            slot = (slot + 1) & mask
        }
    }

    private mutating func grow() {
        let oldKeys = keys, oldValues = values
        keys = Array(repeating: 0, count: oldKeys.count * 2)
        values = Array(repeating: 0, count: oldKeys.count * 2)
        mask = keys.count - 1
        count = 0
        for (index, key) in oldKeys.enumerated() where key != 0 {
            let slot = insert(key)
            values[slot] = oldValues[index]
        }
    }
}

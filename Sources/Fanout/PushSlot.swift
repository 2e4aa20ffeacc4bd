import APNs

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

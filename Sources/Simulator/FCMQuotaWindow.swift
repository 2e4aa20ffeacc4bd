import IO

/// FCM's per-project message quota (FCM.md, "Quotas": 600,000 messages per minute, a sliding
/// window, client errors counted too). Kept in one-second buckets over the last 60 seconds, so
/// memory stays fixed however high the limit: the window slides by whole seconds, which is as
/// fine as a `Retry-After` in seconds can say anyway.
struct FCMQuotaWindow {
    let limit: Int
    /// Messages per second, for the 60 seconds ending at `newestSecond` (a ring indexed by second).
    private var buckets = [Int](repeating: 0, count: 60)
    private var newestSecond: UInt64 = 0
    private var total = 0

    init(limit: Int) { self.limit = limit }

    /// Counts one message at `now` and returns nil, or, when the last minute already holds
    /// `limit`, counts nothing and returns how long until enough of them leave the window.
    mutating func admit(at now: MonotonicInstant) -> Duration? {
        let second = now.nanoseconds / 1_000_000_000
        slide(to: second)
        guard total >= limit else {
            buckets[Int(second % 60)] += 1
            total += 1
            return nil
        }
        // The oldest seconds leave first: wait until the window holds fewer than `limit`.
        var leaving = 0
        for age in stride(from: 59, through: 0, by: -1) {
            leaving += buckets[Int((second + 60 - UInt64(age)) % 60)]
            if total - leaving < limit { return .seconds(Int64(60 - age)) }
        }
        return .seconds(60)
    }

    /// Empties the buckets of the seconds that left the window since `newestSecond`.
    private mutating func slide(to second: UInt64) {
        guard second > newestSecond else { return }
        let gone = min(second - newestSecond, 60)
        for step in 1...gone {
            let index = Int((newestSecond + step) % 60)
            total -= buckets[index]
            buckets[index] = 0
        }
        newestSecond = second
    }
}

/// Push latencies in fixed buckets (10 µs wide up to 1 s, then 10 ms wide up to 60 s): recording
/// is one array increment, percentiles come from the counts. One per loop thread, merged at the end.
public struct LatencyHistogram: Sendable {
    private static let fineBuckets = 100_000   // 10 µs × 100k = 1 s
    private static let coarseBuckets = 5_900   // 10 ms × 5.9k = 59 s more
    private var counts: [UInt32]
    public private(set) var total = 0

    public init() { counts = Array(repeating: 0, count: Self.fineBuckets + Self.coarseBuckets + 1) }

    public mutating func record(nanoseconds: UInt64) {
        let micros = Int(nanoseconds / 1_000)
        let index: Int
        if micros < 1_000_000 {
            index = micros / 10
        } else {
            index = min(Self.fineBuckets + (micros - 1_000_000) / 10_000, counts.count - 1)
        }
        counts[index] &+= 1
        total += 1
    }

    public mutating func merge(_ other: LatencyHistogram) {
        for index in counts.indices { counts[index] &+= other.counts[index] }
        total += other.total
    }

    /// The latency in milliseconds below which `fraction` (0…1) of the recorded pushes fall.
    public func percentile(_ fraction: Double) -> Double {
        guard total > 0 else { return 0 }
        let rank = max(1, Int((Double(total) * fraction).rounded(.up)))
        var seen = 0
        for (index, count) in counts.enumerated() where count > 0 {
            seen += Int(count)
            if seen >= rank {
                if index < Self.fineBuckets { return Double(index * 10 + 5) / 1_000 }
                return 1_000 + Double((index - Self.fineBuckets) * 10) + 5
            }
        }
        return 60_000
    }
}

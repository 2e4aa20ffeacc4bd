#if canImport(Glibc)
import Glibc
#endif

/// Push latencies in fixed buckets (10 µs wide up to 1 s, then 10 ms wide up to 60 s): recording
/// is one array increment, percentiles come from the counts. One per loop thread, merged at the end.
public struct LatencyHistogram: Sendable {
    private static let fineBuckets = 100_000   // 10 µs × 100k = 1 s
    private static let coarseBuckets = 5_900   // 10 ms × 5.9k = 59 s more
    private var counts: [UInt32]
    public private(set) var total = 0
    /// Every recorded latency added up (a Prometheus histogram's `_sum`).
    public private(set) var sumNanoseconds: UInt64 = 0

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
        sumNanoseconds &+= nanoseconds
    }

    public mutating func merge(_ other: LatencyHistogram) {
        for index in counts.indices { counts[index] &+= other.counts[index] }
        total += other.total
        sumNanoseconds &+= other.sumNanoseconds
    }

    /// The latency in milliseconds below which `fraction` (0…1) of the recorded pushes fall.
    public func percentile(_ fraction: Double) -> Double {
        guard total > 0 else { return 0 }
        let rank = max(1, Int((Double(total) * fraction).rounded(.up)))
        var seen = 0
        for (index, count) in counts.enumerated() where count > 0 {
            seen += Int(count)
            if seen >= rank { return Self.milliseconds(ofBucket: index) }
        }
        return 60_000
    }

    /// The recorded counts regrouped into `buckets` log-spaced buckets from the smallest to the
    /// largest recorded latency, for a histogram plot: latencies spread over decades (a fast
    /// loopback answer next to a retried one), which equal-width buckets would squash into one bar.
    /// Each bucket holds the latencies above the previous one's upper bound, up to its own. One
    /// bucket when every latency fell in the same 10 µs (or 10 ms) slot; empty when nothing was recorded.
    public func distribution(buckets: Int = 40) -> [(upperMilliseconds: Double, count: Int)] {
        guard let first = counts.firstIndex(where: { $0 > 0 }), let last = counts.lastIndex(where: { $0 > 0 }) else { return [] }
        // Bucket midpoints, as `percentile` reports them, so its p50/p99 fall inside the plotted range.
        let low = Self.milliseconds(ofBucket: first), high = Self.milliseconds(ofBucket: last)
        guard first < last else { return [(high, total)] }
        let slots = max(1, buckets)
        let logSpan = log(high / low)
        var out = (0..<slots).map { slot in
            (upperMilliseconds: slot == slots - 1 ? high : low * exp(logSpan * Double(slot + 1) / Double(slots)), count: 0)
        }
        for index in first...last where counts[index] > 0 {
            let position = log(Self.milliseconds(ofBucket: index) / low) / logSpan * Double(slots)
            // An edge value belongs to the bucket below it (upper bounds are inclusive); rounding
            // must not push the largest latency past the last bucket.
            let slot = min(slots - 1, max(0, Int((position - 1e-9).rounded(.up)) - 1))
            out[slot].count += Int(counts[index])
        }
        return out
    }

    /// The midpoint of an internal bucket in milliseconds.
    private static func milliseconds(ofBucket index: Int) -> Double {
        if index < fineBuckets { return Double(index * 10 + 5) / 1_000 }
        return 1_000 + Double((index - fineBuckets) * 10) + 5
    }

    /// How many recorded latencies are at most `milliseconds` (a Prometheus bucket's count; the
    /// bucket holding the bound counts whole, so a bound is exact to the bucket width).
    public func count(atMost milliseconds: Double) -> Int {
        let micros = Int(milliseconds * 1000)
        let last = micros < 1_000_000 ? micros / 10 : min(Self.fineBuckets + (micros - 1_000_000) / 10_000, counts.count - 1)
        var sum = 0
        for index in 0...max(0, min(last, counts.count - 1)) { sum += Int(counts[index]) }
        return sum
    }
}

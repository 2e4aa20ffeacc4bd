import Cluster
import DaemonConfiguration
import IO
import Vocabulary

/// A token bucket per client address: `rate` requests a second on average, bursts of `burst`.
/// The table is bounded: when it holds `maximumClients` addresses, buckets that have refilled
/// completely (their clients have been quiet) are dropped first, so a flood of spoofed or rotating
/// addresses cannot grow memory without bound.
public final class RateLimiter: Sendable {
    private struct Bucket {
        var tokens: Double
        var updated: MonotonicInstant
    }

    private let rate: Double
    private let burst: Double
    private let maximumClients: Int
    private let buckets = Lock<[String: Bucket]>([:])

    public init(perSecond rate: Double, burst: Int, maximumClients: Int = 100_000) {
        self.rate = rate
        self.burst = Double(burst)
        self.maximumClients = maximumClients
    }

    /// Takes one token for `client`; nil when allowed, else how long to wait (for `Retry-After`).
    public func admit(_ client: String, now: MonotonicInstant = .now()) -> Duration? {
        buckets.withLock { buckets in
            var bucket = buckets[client] ?? Bucket(tokens: burst, updated: now)
            bucket.tokens = min(burst, bucket.tokens + (now - bucket.updated).seconds * rate)
            bucket.updated = now
            guard bucket.tokens >= 1 else {
                buckets[client] = bucket
                return .milliseconds(Int64(((1 - bucket.tokens) / rate * 1000).rounded(.up)))
            }
            bucket.tokens -= 1
            if buckets[client] == nil && buckets.count >= maximumClients { evict(&buckets, now: now) }
            buckets[client] = bucket
            return nil
        }
    }

    private func evict(_ buckets: inout [String: Bucket], now: MonotonicInstant) {
        let full = buckets.filter { min(burst, $0.value.tokens + (now - $0.value.updated).seconds * rate) >= burst }.map(\.key)
        for key in full { buckets.removeValue(forKey: key) }
        // Everyone is busy: forget the longest-quiet half rather than refuse to track a new client.
        if buckets.count >= maximumClients {
            for key in buckets.sorted(by: { $0.value.updated < $1.value.updated }).prefix(buckets.count / 2).map(\.key) {
                buckets.removeValue(forKey: key)
            }
        }
    }
}

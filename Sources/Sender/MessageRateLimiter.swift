import IO
import Vocabulary

/// A pool's messages a minute (FCM's quota is per Firebase project: 600,000 a minute by default):
/// a token bucket every loop of the pool takes from before it writes a request, so retries and
/// errors count as Google counts them. It holds one second of messages, so a burst after a quiet
/// spell is at most that. One lock per submission batch (a connection's free streams), never per
/// message.
final class MessageRateLimiter: Sendable {
    private let perSecond: Double
    private let capacity: Double
    private struct Bucket { var tokens: Double; var at: UInt64 }
    private let bucket: Lock<Bucket>

    init(messagesPerMinute: Int) {
        perSecond = Double(max(1, messagesPerMinute)) / 60
        capacity = max(1, perSecond)
        bucket = Lock(Bucket(tokens: capacity, at: MonotonicInstant.now().nanoseconds))
    }

    /// Takes up to `wanted` messages' worth; returns how many it may send now.
    func take(upTo wanted: Int, now: MonotonicInstant) -> Int {
        bucket.withLock { bucket in
            refill(&bucket, now: now)
            let granted = min(wanted, Int(bucket.tokens))
            bucket.tokens -= Double(granted)
            return granted
        }
    }

    /// Gives back what was taken and not sent (the queue ran dry first).
    func giveBack(_ count: Int) {
        guard count > 0 else { return }
        bucket.withLock { $0.tokens = min(capacity, $0.tokens + Double(count)) }
    }

    /// When the next message may go, if not now (the loop's wake timer).
    func nextAvailable(now: MonotonicInstant) -> MonotonicInstant? {
        bucket.withLock { bucket in
            refill(&bucket, now: now)
            guard bucket.tokens < 1 else { return nil }
            return now.advanced(byNanoseconds: UInt64((1 - bucket.tokens) / perSecond * 1e9) + 1)
        }
    }

    private func refill(_ bucket: inout Bucket, now: MonotonicInstant) {
        let elapsed = now.nanoseconds > bucket.at ? now.nanoseconds - bucket.at : 0
        bucket.tokens = min(capacity, bucket.tokens + Double(elapsed) / 1e9 * perSecond)
        bucket.at = now.nanoseconds
    }
}

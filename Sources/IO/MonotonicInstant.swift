#if canImport(Glibc)
import Glibc
#endif

/// A point on CLOCK_MONOTONIC, in nanoseconds: deadlines and latencies never jump with wall time.
/// The event loops compare these every turn, so it is one machine word; spans of time are
/// `Duration` everywhere (configuration, back-off, timeouts) and are converted once, where a value
/// is configured, with `Duration.nanoseconds`.
public struct MonotonicInstant: Comparable, Hashable, Sendable, CustomStringConvertible {
    public let nanoseconds: UInt64

    public init(nanoseconds: UInt64) { self.nanoseconds = nanoseconds }

    @inline(__always)
    public static func now() -> MonotonicInstant {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)  // cannot fail for CLOCK_MONOTONIC with a valid pointer
        return MonotonicInstant(nanoseconds: UInt64(ts.tv_sec) &* 1_000_000_000 &+ UInt64(ts.tv_nsec))
    }

    /// Later than every instant a process will see: "no deadline" where a value is needed.
    public static let distantFuture = MonotonicInstant(nanoseconds: .max)

    @inline(__always)
    public static func < (lhs: MonotonicInstant, rhs: MonotonicInstant) -> Bool { lhs.nanoseconds < rhs.nanoseconds }

    /// `self + span`, saturating (a huge timeout is "never", not a wrapped-around past).
    @inline(__always)
    public func advanced(byNanoseconds span: UInt64) -> MonotonicInstant {
        let (sum, overflow) = nanoseconds.addingReportingOverflow(span)
        return MonotonicInstant(nanoseconds: overflow ? .max : sum)
    }

    public static func + (lhs: MonotonicInstant, rhs: Duration) -> MonotonicInstant { lhs.advanced(byNanoseconds: rhs.nanoseconds) }

    /// The time from `rhs` to `lhs` (zero if `rhs` is later).
    public static func - (lhs: MonotonicInstant, rhs: MonotonicInstant) -> Duration {
        lhs.nanoseconds > rhs.nanoseconds ? .nanoseconds(Int64(lhs.nanoseconds - rhs.nanoseconds)) : .zero
    }

    public var description: String { "\(nanoseconds) ns" }
}

extension Duration {
    /// The span in whole nanoseconds, clamped to 0…UInt64.max (negative spans are zero).
    public var nanoseconds: UInt64 {
        let (seconds, attoseconds) = components
        guard seconds >= 0 else { return 0 }
        let (whole, overflowed) = UInt64(seconds).multipliedReportingOverflow(by: 1_000_000_000)
        let (sum, carried) = whole.addingReportingOverflow(UInt64(max(0, attoseconds) / 1_000_000_000))
        return overflowed || carried ? .max : sum
    }

    /// Milliseconds, for messages.
    public var milliseconds: Int64 { Int64(clamping: nanoseconds / 1_000_000) }

    /// Seconds as a Double, for reports.
    public var seconds: Double { Double(nanoseconds) / 1e9 }
}

#if canImport(Glibc)
import Glibc
#endif

/// The wall clock, read in one place: records (registered-at, updated-at), expirations, JWT issue
/// times, certificate validity. Durations and deadlines use `IO.MonotonicInstant` instead, which
/// a clock step cannot move. Callers that must move time in tests take `seconds` or
/// `milliseconds` as a default argument or closure.
public enum WallClock {
    /// Milliseconds since 1970 by CLOCK_REALTIME.
    public static func milliseconds() -> UInt64 {
        var time = timespec()
        // CLOCK_REALTIME with a valid pointer cannot fail (EINVAL/EFAULT only): a failure is a bug.
        let rc = clock_gettime(CLOCK_REALTIME, &time)
        precondition(rc == 0, "clock_gettime(CLOCK_REALTIME) failed: errno \(errno)")
        return UInt64(time.tv_sec) * 1000 + UInt64(time.tv_nsec) / 1_000_000
    }

    /// Whole seconds since 1970 (what `time(2)` answers).
    public static func seconds() -> Int64 { Int64(milliseconds() / 1000) }
}

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
        // Below IO, so not through `Syscall`: with CLOCK_REALTIME and a valid pointer it cannot fail
        // (EINVAL and EFAULT are its only errors), so a failure is a bug.
        let rc = clock_gettime(CLOCK_REALTIME, &time)
        precondition(rc == 0, "clock_gettime(CLOCK_REALTIME) failed")
        return UInt64(time.tv_sec) * 1000 + UInt64(time.tv_nsec) / 1_000_000
    }

    /// Whole seconds since 1970 (what `time(2)` answers).
    public static func seconds() -> Int64 { Int64(milliseconds() / 1000) }
}

#if canImport(Glibc)
import Glibc
#endif

/// Monotonic time in nanoseconds (CLOCK_MONOTONIC): deadlines and latency never jump with wall time.
public enum MonotonicClock {
    @inline(__always)
    public static func nanoseconds() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return UInt64(ts.tv_sec) &* 1_000_000_000 &+ UInt64(ts.tv_nsec)
    }
}

#if canImport(Glibc)
import Glibc
#endif

/// The process's limit on open descriptors (RLIMIT_NOFILE). A daemon raises its soft limit to the
/// hard one at start, as Go's runtime does: the soft default (1,024 on Debian) is a relic of
/// select(2), which nothing here uses, and running out costs refused requests.
public enum DescriptorLimit {
    /// Raises the soft limit to the hard one; returns the soft limit in force afterwards.
    @discardableResult
    public static func raiseSoftToHard() -> Int {
        var limit = rlimit()
        guard getrlimit(RLIMIT_NOFILE_VALUE, &limit) == 0 else { return 0 }
        if limit.rlim_cur < limit.rlim_max {
            var raised = limit
            raised.rlim_cur = limit.rlim_max
            // EPERM cannot happen for soft ≤ hard; a failure leaves the old limit, which is reported.
            if setrlimit(RLIMIT_NOFILE_VALUE, &raised) == 0 { return Int(clamping: raised.rlim_cur) }
        }
        return Int(clamping: limit.rlim_cur)
    }

    /// The soft limit in force (nil when it cannot be read): `/metrics`' `process_max_fds`.
    public static var current: Int? {
        var limit = rlimit()
        guard getrlimit(RLIMIT_NOFILE_VALUE, &limit) == 0 else { return nil }
        return Int(clamping: limit.rlim_cur)
    }

    private static var RLIMIT_NOFILE_VALUE: __rlimit_resource_t { __rlimit_resource_t(UInt32(RLIMIT_NOFILE.rawValue)) }
}

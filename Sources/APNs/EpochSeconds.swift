/// Checks for the dates APNs and ActivityKit take in seconds since the epoch (`apns-expiration`,
/// `timestamp`, `stale-date`, `dismissal-date`). Milliseconds are the usual mistake, and a
/// millisecond date reads as the year 50,000, so anything past the year 5138 is refused as one.
enum EpochSeconds {
    /// 10^11 seconds: year 5138, far beyond any real date and far below any millisecond "now".
    static let limit: Int64 = 100_000_000_000

    static func check(_ value: Int64, field: String, reason: Reason? = nil) throws(ValidationError) {
        guard value >= 0 else {
            throw ValidationError(field: field, "is \(value); give seconds since the epoch (UTC), not a negative number", reason: reason)
        }
        guard value < limit else {
            throw ValidationError(field: field, "is \(value), which looks like milliseconds; give seconds since the epoch (divide by 1000)",
                                  reason: reason)
        }
    }
}

/// Turns APNs' refusal of a provider token into a diagnosis of this machine's clock, when the clock is
/// the likely cause. Pure (no I/O, no clock of its own) so the Sender can call it with the token's
/// `iat`, its local time and APNs' reason, and report the result once instead of retrying in a loop:
/// a wrong clock does not fix itself by sending again.
public enum ProviderTokenClockDiagnosis {
    /// How soon after a window starts an `InvalidProviderToken` is blamed on a clock running ahead.
    public static let switchGrace: Duration = .seconds(switchGraceSeconds)
    static let switchGraceSeconds: Int64 = 300

    /// A message naming the clock as the cause, or nil when the refusal does not point at the clock
    /// (then report APNs' reason as it is).
    ///
    /// - `ExpiredProviderToken` for a token this machine considers at most 50 minutes old: APNs
    ///   thinks it is over an hour old, so this machine's clock is behind APNs' by at least the
    ///   difference (10 minutes or more).
    /// - `InvalidProviderToken` within `switchGrace` of the start of the token's window, while an
    ///   earlier token was accepted: the new `iat` may lie in APNs' future, i.e. this clock is ahead.
    ///
    /// - Parameters:
    ///   - reason: APNs' `reason` string.
    ///   - issuedAt: the refused token's `iat` (Unix seconds; a grid point).
    ///   - now: this machine's Unix seconds when the answer arrived.
    ///   - earlierTokenAccepted: whether APNs accepted an earlier token from this key (in this process).
    public static func diagnose(reason: String, issuedAt: Int64, now: Int64, earlierTokenAccepted: Bool) -> String? {
        let age = now - issuedAt
        switch reason {
        case "ExpiredProviderToken":
            guard age <= ProviderTokenSource.maximumAgeSeconds else { return nil }
            // APNs refuses iat older than 3600 s; it saw more than that where we see `age`.
            let behind = (3600 - age) / 60
            return "APNs says the provider token issued at \(iso8601(issuedAt)) is expired (over an hour old), "
                + "but it is \(minutes(age)) old by this machine's clock (now \(iso8601(now))): "
                + "this machine's clock is at least \(behind) minutes behind APNs'. Synchronise it (NTP) and retry."
        case "InvalidProviderToken":
            guard earlierTokenAccepted, age >= 0, age < switchGraceSeconds else { return nil }
            return "APNs refused the provider token issued at \(iso8601(issuedAt)) \(minutes(age)) after that time "
                + "(now \(iso8601(now)) by this machine's clock), although the previous token worked: "
                + "this machine's clock may be ahead of APNs', so the new token's iat is in APNs' future. "
                + "Synchronise the clock (NTP) and retry."
        default:
            return nil
        }
    }

    /// `YYYY-MM-DDTHH:MM:SSZ` for Unix `seconds`, computed from the proleptic Gregorian calendar
    /// (no locale, no time zone database: the message must read the same on every node).
    public static func iso8601(_ seconds: Int64) -> String {
        let days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        let second = seconds - days * 86_400
        // Days since 1970-01-01 to a civil date (H. Hinnant's days_from_civil inverse): eras of
        // 400 years (146 097 days) starting on March 1st, so the leap day is the era's last day.
        let shifted = days + 719_468
        let era = (shifted >= 0 ? shifted : shifted - 146_096) / 146_097
        let dayOfEra = shifted - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthIndex + 2) / 5 + 1
        let month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        return pad(year, 4) + "-" + pad(month, 2) + "-" + pad(day, 2) + "T"
            + pad(second / 3600, 2) + ":" + pad(second / 60 % 60, 2) + ":" + pad(second % 60, 2) + "Z"
    }

    private static func pad(_ value: Int64, _ width: Int) -> String {
        let text = String(value)
        return String(repeating: "0", count: max(0, width - text.count)) + text
    }

    /// "12 min 5 s", for ages and offsets in messages.
    private static func minutes(_ seconds: Int64) -> String {
        seconds < 60 ? "\(seconds) s" : "\(seconds / 60) min \(seconds % 60) s"
    }
}

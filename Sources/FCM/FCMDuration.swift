/// FCM's duration strings (`google.protobuf.Duration` in JSON): whole seconds, then up to 9
/// fractional digits, then `s` — `"0s"`, `"3.5s"`, `"2419200s"`. The form of `android.ttl`, which
/// FCM takes from 0 to 4 weeks (FCM.md, "Sending"; `"0s"` is deliver now or drop).
public enum FCMDuration {
    /// `android.ttl`'s range, 0 to 2,419,200 s (4 weeks, also FCM's default).
    public static let ttlRange: ClosedRange<Duration> = .zero ... .seconds(2_419_200)

    /// `duration` as FCM writes it: trailing zeros of the fraction dropped, no fraction for whole
    /// seconds. Refused outside `ttlRange`, and finer than a nanosecond (FCM cannot say it).
    public static func ttl(_ duration: Duration, field: String = "android.ttl") throws(FCMValidationError) -> String {
        guard ttlRange.contains(duration) else {
            throw FCMValidationError(field: field, "is \(duration); FCM takes 0 to 2419200 s (4 weeks)")
        }
        let (seconds, attoseconds) = duration.components
        guard attoseconds % 1_000_000_000 == 0 else {
            throw FCMValidationError(field: field, "is \(duration); FCM's durations stop at nanoseconds")
        }
        var nanoseconds = attoseconds / 1_000_000_000
        guard nanoseconds > 0 else { return "\(seconds)s" }
        var digits = 9
        while nanoseconds % 10 == 0 { nanoseconds /= 10; digits -= 1 }
        let fraction = String(nanoseconds)
        return "\(seconds)." + String(repeating: "0", count: digits - fraction.count) + fraction + "s"
    }

    /// The duration of a string of that form, or nil when it is not one (a sign, no `s`, ten
    /// fractional digits, more than 12 digits of seconds). The range is the caller's to check.
    public static func parse(_ text: String) -> Duration? {
        let bytes = Array(text.utf8)
        guard bytes.last == UInt8(ascii: "s") else { return nil }
        let number = bytes.dropLast()
        let dot = number.firstIndex(of: UInt8(ascii: "."))
        let whole = number[..<(dot ?? number.endIndex)]
        let fraction = dot.map { number[number.index(after: $0)...] } ?? []
        guard (1...12).contains(whole.count), whole.allSatisfy(isDigit) else { return nil }
        if dot != nil { guard (1...9).contains(fraction.count), fraction.allSatisfy(isDigit) else { return nil } }
        let seconds = whole.reduce(Int64(0)) { $0 * 10 + Int64($1 - UInt8(ascii: "0")) }
        var nanoseconds = fraction.reduce(Int64(0)) { $0 * 10 + Int64($1 - UInt8(ascii: "0")) }
        for _ in fraction.count..<9 { nanoseconds *= 10 }
        return .seconds(seconds) + .nanoseconds(nanoseconds)
    }

    private static func isDigit(_ byte: UInt8) -> Bool { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) }
}

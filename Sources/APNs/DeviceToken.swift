/// A device token (or push-to-start / Live Activity update token) in hexadecimal, as it goes into
/// `/3/device/<token>`. Apple says not to assume a length, so any even number of hex digits is taken
/// (up to a generous bound that keeps the `:path` within APNs' header-list limit). Stored in lower
/// case so one token has one spelling in the store.
///
/// `description` is the redacted form: interpolating a token into a log line never prints it whole.
public struct DeviceToken: Sendable, Hashable, CustomStringConvertible {
    /// The one bound on a token's length, for every parser and store in Sokuho: 100 bytes, three
    /// times today's 32-byte tokens (Apple says not to assume a length), far below the 8 KB
    /// header-list limit, and what the sender's inline `DeviceTokenBytes` holds without a heap
    /// allocation on the hot path. One bound, so a token `send` takes is one the store takes too.
    public static let maximumByteCount = 100
    /// `maximumByteCount` in hex digits.
    public static let maximumHexDigits = 2 * maximumByteCount

    /// The token in lower-case hex.
    public let hex: String

    public init(hex text: String) throws(ValidationError) {
        try HeaderValueText.check(text, field: "device token", allowed: HeaderValueText.isHexDigit,
                                  expected: "the token as hexadecimal digits", reason: .badDeviceToken, quoting: false)
        let count = text.utf8.count
        guard count % 2 == 0 else {
            throw ValidationError(field: "device token", "has \(count) hex digits, an odd number; a token is whole bytes, so a digit is missing",
                                  reason: .badDeviceToken)
        }
        guard count <= DeviceToken.maximumHexDigits else {
            throw ValidationError(field: "device token", "has \(count) hex digits (\(count / 2) bytes); a token has at most \(DeviceToken.maximumByteCount) bytes (\(DeviceToken.maximumHexDigits) hex digits)",
                                  reason: .badDeviceToken)
        }
        hex = text.lowercased()
    }

    /// The last 8 characters behind an ellipsis: enough to tell tokens apart in a log, useless to push to.
    public var redacted: String { "…" + hex.suffix(8) }

    public var description: String { redacted }

    /// The `:path` of a device push to this token.
    public var path: String { "/3/device/" + hex }
}

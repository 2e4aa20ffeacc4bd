import Vocabulary

/// APNs' rules on the one token type (`Vocabulary.DeviceToken`): a device, push-to-start or Live
/// Activity update token is given as hexadecimal, as it goes into `/3/device/<token>`. Apple says
/// not to assume a length, so any even number of hex digits is taken, up to
/// `DeviceToken.apnsByteCount`. The messages name the field and the `BadDeviceToken` reason, and
/// never quote the token (a typo'd token is still someone's token).
extension DeviceToken {
    public init(hex text: String) throws(ValidationError) {
        try HeaderValueText.check(text, field: "device token", allowed: HeaderValueText.isHexDigit,
                                  expected: "the token as hexadecimal digits", reason: .badDeviceToken, quoting: false)
        let count = text.utf8.count
        guard count % 2 == 0 else {
            throw ValidationError(field: "device token", "has \(count) hex digits, an odd number; a token is whole bytes, so a digit is missing",
                                  reason: .badDeviceToken)
        }
        let bound = DeviceToken.apnsByteCount.upperBound
        guard count <= 2 * bound else {
            throw ValidationError(field: "device token", "has \(count) hex digits (\(count / 2) bytes); a token has at most \(bound) bytes (\(2 * bound) hex digits)",
                                  reason: .badDeviceToken)
        }
        // Checked above: non-empty, hex, even, within the bound; the decode cannot fail.
        guard let token = DeviceToken(hexDigits: text) else { preconditionFailure("checked hex did not decode") }
        self = token
    }

    /// The `:path` of a device push to this token.
    public var path: String { "/3/device/" + hex }
}

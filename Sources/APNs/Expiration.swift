/// The `apns-expiration` header: until when APNs stores and retries a push (seconds since the
/// epoch). `0` (`immediately`) means one delivery attempt, nothing stored; it is also the only value a
/// No-Message-Stored broadcast channel accepts.
public struct Expiration: Sendable, Hashable, CustomStringConvertible {
    public let epochSeconds: Int64

    /// One attempt, not stored.
    public static let immediately = Expiration(checked: 0)

    public init(epochSeconds: Int64) throws(ValidationError) {
        try EpochSeconds.check(epochSeconds, field: HeaderName.expiration, reason: .badExpirationDate)
        self.epochSeconds = epochSeconds
    }

    /// Parses a received `apns-expiration` value.
    public init(headerValue: String) throws(ValidationError) {
        guard let seconds = Int64(headerValue) else {
            throw ValidationError(field: HeaderName.expiration,
                                  "'\(HeaderValueText.printable(headerValue))' is not a number; give seconds since the epoch, or 0 for one attempt",
                                  reason: .badExpirationDate)
        }
        try self.init(epochSeconds: seconds)
    }

    private init(checked seconds: Int64) { epochSeconds = seconds }

    public var isImmediate: Bool { epochSeconds == 0 }
    public var headerValue: String { String(epochSeconds) }
    public var description: String { headerValue }
}

/// One HTTP/2 header as APNs sees it. Requests list theirs in a fixed order so a connection can hand
/// them to HPACK unchanged, group after group.
public struct HeaderField: Sendable, Hashable {
    public let name: String
    public let value: String

    public init(_ name: String, _ value: String) {
        self.name = name
        self.value = value
    }
}

/// The header names APNs defines, spelled once (HTTP/2 header names are lower case).
public enum HeaderName {
    public static let pushType = "apns-push-type"
    public static let topic = "apns-topic"
    public static let priority = "apns-priority"
    public static let expiration = "apns-expiration"
    public static let collapseID = "apns-collapse-id"
    public static let apnsID = "apns-id"
    public static let uniqueID = "apns-unique-id"
    public static let requestID = "apns-request-id"
    public static let channelID = "apns-channel-id"
}

extension Array where Element == HeaderField {
    /// The value of the first header named `name` (compared without regard to case), or nil.
    /// `name` must be lower case (all `HeaderName`s are); runs once per response, so it does not allocate.
    public func value(named name: String) -> String? {
        for field in self where field.name.utf8.elementsEqual(name.utf8, by: { have, want in
            have == want || (want >= 0x61 && want <= 0x7a && have | 0x20 == want)
        }) {
            return field.value
        }
        return nil
    }
}

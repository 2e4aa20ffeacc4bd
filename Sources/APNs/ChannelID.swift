/// A broadcast channel ID: the base64 string APNs returns in `apns-channel-id` when a channel is
/// created. It travels only in the `apns-channel-id` header, never in a path. Apple says not to
/// assume its size, so only the alphabet is checked.
public struct ChannelID: Sendable, Hashable, CustomStringConvertible {
    public let text: String

    public init(_ text: String) throws(ValidationError) {
        // Standard base64 plus the URL-safe letters, in case APNs ever hands those out.
        try HeaderValueText.check(text, field: HeaderName.channelID,
                                  allowed: { HeaderValueText.isAlphanumeric($0) || "+/=-_".utf8.contains($0) },
                                  expected: "the base64 channel ID returned by channel creation", reason: .badChannelId)
        self.text = text
    }

    public var description: String { text }
}

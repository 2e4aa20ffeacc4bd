/// A broadcast to a channel: `POST /4/broadcasts/apps/<bundle>` with the channel ID in
/// `apns-channel-id`, `apns-push-type: liveactivity`, `apns-priority`, and always `apns-expiration`
/// (APNs answers `BadExpirationDate` without it). No `apns-topic`: the bundle ID is in the path,
/// without any push-type suffix.
public struct BroadcastRequest: Sendable {
    public static let method = HTTPMethod.post

    public let bundle: BundleID
    public let channelID: ChannelID
    public let priority: Priority
    public let expiration: Expiration
    public let requestID: APNsID?
    public let payload: [UInt8]
    public let path: String
    /// `apns-channel-id`, `apns-push-type`, `apns-priority`, `apns-expiration`, then `apns-request-id` when set.
    public let headers: [HeaderField]

    /// - Parameter expiration: on a No-Message-Stored channel only 0 is allowed, and nil means 0; on
    ///   a Most-Recent-Message-Stored channel it is required (APNs keeps the message until then, at
    ///   most 8 hours).
    public init(bundle: BundleID, channelID: ChannelID, storagePolicy: MessageStoragePolicy, priority: Priority,
                expiration: Expiration? = nil, requestID: APNsID? = nil, payload: [UInt8]) throws(ValidationError) {
        // Only the Live Activity suffix is a sure mistake here: other suffixes (.voip, .complication)
        // can be the last word of a real bundle ID.
        if PushType.split(topic: bundle.text).impliedType == .liveactivity {
            throw ValidationError(field: "bundle ID",
                                  "'\(bundle)' ends in the liveactivity suffix '\(PushType.liveactivity.topicSuffix)'; a broadcast path takes the bare bundle ID",
                                  reason: .topicDisallowed)
        }
        switch (storagePolicy, expiration) {
        case (.noMessageStored, nil):
            self.expiration = .immediately
        case (.noMessageStored, let given?):
            guard given.isImmediate else {
                throw ValidationError(field: HeaderName.expiration,
                                      "is \(given.epochSeconds), but the channel stores no messages, so APNs only accepts 0; leave it out or use 0",
                                      reason: .badExpirationDate)
            }
            self.expiration = given
        case (.mostRecentMessageStored, nil):
            throw ValidationError(field: HeaderName.expiration,
                                  "is required on a broadcast; give the time (epoch seconds) until which APNs should keep the message, or 0 for one attempt",
                                  reason: .badExpirationDate)
        case (.mostRecentMessageStored, let given?):
            self.expiration = given
        }
        try PayloadDestination.broadcast.checkSize(payload.count)
        self.bundle = bundle
        self.channelID = channelID
        self.priority = priority
        self.requestID = requestID
        self.payload = payload
        path = "/4/broadcasts/apps/" + bundle.text
        var headers = [
            HeaderField(HeaderName.channelID, channelID.text),
            HeaderField(HeaderName.pushType, PushType.liveactivity.headerValue),
            HeaderField(HeaderName.priority, priority.headerValue),
            HeaderField(HeaderName.expiration, self.expiration.headerValue),
        ]
        if let requestID { headers.append(HeaderField(HeaderName.requestID, requestID.text)) }
        self.headers = headers
    }
}

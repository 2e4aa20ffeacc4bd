import JSONCore

/// The `{"aps":{…}}` body of a Live Activity start, update or end. Set the fields, then `render` once
/// per group of tokens (or per channel) and reuse the bytes: rendering checks every rule of
/// `LiveActivityKey` and the size limit of the destination.
public struct LiveActivityPayload: Sendable {
    public var event: LiveActivityEvent
    /// Seconds since the epoch; the device ignores a push older than the last one it showed.
    public var timestamp: Int64
    /// The app's `ContentState` as JSON object bytes, embedded verbatim.
    public var contentState: [UInt8]?
    /// start only: the name of the app's `ActivityAttributes` struct.
    public var attributesType: String?
    /// start only: the static attributes as JSON object bytes, embedded verbatim.
    public var attributes: [UInt8]?
    /// Required on start, optional on update and end.
    public var alert: LiveActivityAlert?
    /// start only (iOS 18+): `input-push-token: 1`, so the started activity gets an update token.
    public var requestsUpdateToken = false
    /// start only (iOS 18+): subscribes the started activity to this broadcast channel.
    public var inputPushChannel: ChannelID?
    /// start and update: when the content goes stale (epoch seconds).
    public var staleDate: Int64?
    /// end only: when the ended activity leaves the Lock Screen (epoch seconds; past means now).
    public var dismissalDate: Int64?
    /// start and update: orders this app's activities (any number).
    public var relevanceScore: Double?

    public init(event: LiveActivityEvent, timestamp: Int64, contentState: [UInt8]? = nil) {
        self.event = event
        self.timestamp = timestamp
        self.contentState = contentState
    }

    public static func start(timestamp: Int64, attributesType: String, attributes: [UInt8], contentState: [UInt8],
                             alert: LiveActivityAlert) -> LiveActivityPayload {
        var payload = LiveActivityPayload(event: .start, timestamp: timestamp, contentState: contentState)
        payload.attributesType = attributesType
        payload.attributes = attributes
        payload.alert = alert
        return payload
    }

    public static func update(timestamp: Int64, contentState: [UInt8]) -> LiveActivityPayload {
        LiveActivityPayload(event: .update, timestamp: timestamp, contentState: contentState)
    }

    public static func end(timestamp: Int64, contentState: [UInt8]?, dismissalDate: Int64? = nil) -> LiveActivityPayload {
        var payload = LiveActivityPayload(event: .end, timestamp: timestamp, contentState: contentState)
        payload.dismissalDate = dismissalDate
        return payload
    }

    /// The largest `attributes` plus `content-state` ActivityKit takes ("a combined size of 4 KB").
    public static let maximumActivityDataBytes = 4096

    /// The body bytes, keys in a fixed order (timestamp, event, relevance-score, stale-date,
    /// dismissal-date, attributes-type, attributes, input-push-token, input-push-channel, alert,
    /// content-state).
    public func render(for destination: PayloadDestination = .device(.liveactivity)) throws(ValidationError) -> [UInt8] {
        guard destination.pushType == .liveactivity else {
            throw ValidationError(field: HeaderName.pushType,
                                  "is \(destination.pushType.rawValue), but a Live Activity payload needs push type liveactivity")
        }
        try LiveActivityKey.check(event: event, destination: destination) { key in
            switch key {
            case .timestamp, .event: true
            case .relevanceScore: relevanceScore != nil
            case .staleDate: staleDate != nil
            case .dismissalDate: dismissalDate != nil
            case .attributesType: attributesType != nil
            case .attributes: attributes != nil
            case .inputPushToken: requestsUpdateToken
            case .inputPushChannel: inputPushChannel != nil
            case .alert: alert != nil
            case .contentState: contentState != nil
            }
        }
        try EpochSeconds.check(timestamp, field: LiveActivityKey.timestamp.field)
        if let staleDate { try EpochSeconds.check(staleDate, field: LiveActivityKey.staleDate.field) }
        if let dismissalDate { try EpochSeconds.check(dismissalDate, field: LiveActivityKey.dismissalDate.field) }
        if let relevanceScore, !relevanceScore.isFinite {
            throw ValidationError(field: LiveActivityKey.relevanceScore.field, "is \(relevanceScore); give a finite number")
        }
        if let attributesType, attributesType.isEmpty {
            throw ValidationError(field: LiveActivityKey.attributesType.field, "is empty; give \(LiveActivityKey.attributesType.meaning)")
        }
        let state = try contentState.map { (bytes: [UInt8]) throws(ValidationError) in
            try EmbeddedJSONObject.validated(bytes, field: LiveActivityKey.contentState.field)
        }
        let attributeBytes = try attributes.map { (bytes: [UInt8]) throws(ValidationError) in
            try EmbeddedJSONObject.validated(bytes, field: LiveActivityKey.attributes.field)
        }
        let activityData = (state?.count ?? 0) + (attributeBytes?.count ?? 0)
        guard activityData <= LiveActivityPayload.maximumActivityDataBytes else {
            throw ValidationError(field: LiveActivityKey.contentState.field,
                                  "with attributes is \(activityData) bytes; ActivityKit takes at most \(LiveActivityPayload.maximumActivityDataBytes) bytes of Live Activity data, so shorten it")
        }

        var writer = JSONWriter(reservingCapacity: 256 + activityData)
        writer.beginObject()
        writer.key("aps")
        writer.beginObject()
        writer.key(LiveActivityKey.timestamp.rawValue)
        writer.int(timestamp)
        writer.key(LiveActivityKey.event.rawValue)
        writer.string(event.rawValue)
        if let relevanceScore {
            writer.key(LiveActivityKey.relevanceScore.rawValue)
            writer.double(relevanceScore)
        }
        if let staleDate {
            writer.key(LiveActivityKey.staleDate.rawValue)
            writer.int(staleDate)
        }
        if let dismissalDate {
            writer.key(LiveActivityKey.dismissalDate.rawValue)
            writer.int(dismissalDate)
        }
        if let attributesType {
            writer.key(LiveActivityKey.attributesType.rawValue)
            writer.string(attributesType)
        }
        if let attributeBytes {
            writer.key(LiveActivityKey.attributes.rawValue)
            writer.raw(attributeBytes)
        }
        if requestsUpdateToken {
            writer.key(LiveActivityKey.inputPushToken.rawValue)
            writer.int(1)
        }
        if let inputPushChannel {
            writer.key(LiveActivityKey.inputPushChannel.rawValue)
            writer.string(inputPushChannel.text)
        }
        if let alert {
            writer.key(LiveActivityKey.alert.rawValue)
            alert.write(to: &writer)
        }
        if let state {
            writer.key(LiveActivityKey.contentState.rawValue)
            writer.raw(state)
        }
        writer.endObject()
        writer.endObject()
        try destination.checkSize(writer.bytes.count)
        return writer.bytes
    }
}

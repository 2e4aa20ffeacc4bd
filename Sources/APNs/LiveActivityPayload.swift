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
        /// Writes `"key":value` when the value is set.
        func member<Value>(_ key: LiveActivityKey, _ value: Value?, _ write: (inout JSONWriter, Value) -> Void) {
            guard let value else { return }
            writer.key(key.rawValue)
            write(&writer, value)
        }
        writer.beginObject()
        writer.key("aps")
        writer.beginObject()
        member(.timestamp, timestamp) { $0.int($1) }
        member(.event, event.rawValue) { $0.string($1) }
        member(.relevanceScore, relevanceScore) { $0.double($1) }
        member(.staleDate, staleDate) { $0.int($1) }
        member(.dismissalDate, dismissalDate) { $0.int($1) }
        member(.attributesType, attributesType) { $0.string($1) }
        member(.attributes, attributeBytes) { $0.raw($1) }
        member(.inputPushToken, requestsUpdateToken ? 1 : nil) { $0.int($1) }
        member(.inputPushChannel, inputPushChannel?.text) { $0.string($1) }
        member(.alert, alert) { $1.write(to: &$0) }
        member(.contentState, state) { $0.raw($1) }
        writer.endObject()
        writer.endObject()
        try destination.checkSize(writer.bytes.count)
        return writer.bytes
    }
}

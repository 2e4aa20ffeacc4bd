import Vocabulary

/// A device push (`POST /3/device/<token>`) without its token: push type, topic, priority,
/// expiration, collapse ID, optional `apns-id`, and the body. Built and checked once per group of
/// tokens that get the same push; the header list is made once here, so sending to each token only
/// adds its `:path` (and `authorization`, which the transport owns).
public struct Notification: Sendable {
    public static let method = HTTPMethod.post

    public let pushType: PushType
    public let topic: String
    /// nil: the header is left out, which APNs reads as 10.
    public let priority: Priority?
    /// nil: the header is left out and APNs applies its own storage policy.
    public let expiration: Expiration?
    public let collapseID: CollapseID?
    /// Usually set per push with `with(apnsID:)`; one ID shared by a whole group would be useless.
    public private(set) var apnsID: APNsID?
    public let payload: [UInt8]
    /// `apns-push-type`, `apns-topic`, then `apns-priority`, `apns-expiration`, `apns-collapse-id`,
    /// `apns-id` when set.
    public private(set) var headers: [HeaderField]

    /// Checks every sender rule that concerns one push: the topic fits the push type, the priority
    /// is allowed for it, and the body is within the size limit.
    public init(pushType: PushType, topic: String, priority: Priority? = nil, expiration: Expiration? = nil,
                collapseID: CollapseID? = nil, apnsID: APNsID? = nil, payload: [UInt8]) throws(ValidationError) {
        try pushType.check(topic: topic)
        try self.init(pushType: pushType, fittingTopic: topic, priority: priority, expiration: expiration,
                      collapseID: collapseID, apnsID: apnsID, payload: payload)
    }

    /// The same push to the topic `pushType` implies for `bundle` (`<bundle>.push-type.liveactivity` …).
    /// That topic fits by construction, so it is not read back for a suffix: a bundle ID that itself
    /// ends in `.voip` or `.complication` would be mistaken for one.
    public init(pushType: PushType, bundle: BundleID, priority: Priority? = nil, expiration: Expiration? = nil,
                collapseID: CollapseID? = nil, apnsID: APNsID? = nil, payload: [UInt8]) throws(ValidationError) {
        try self.init(pushType: pushType, fittingTopic: pushType.topic(forBundle: bundle), priority: priority, expiration: expiration,
                      collapseID: collapseID, apnsID: apnsID, payload: payload)
    }

    private init(pushType: PushType, fittingTopic topic: String, priority: Priority?, expiration: Expiration?,
                 collapseID: CollapseID?, apnsID: APNsID?, payload: [UInt8]) throws(ValidationError) {
        try Priority.check(priority, for: pushType)
        try PayloadDestination.device(pushType).checkSize(payload.count)
        self.pushType = pushType
        self.topic = topic
        self.priority = priority
        self.expiration = expiration
        self.collapseID = collapseID
        self.apnsID = apnsID
        self.payload = payload
        var headers = [HeaderField(HeaderName.pushType, pushType.headerValue), HeaderField(HeaderName.topic, topic)]
        headers.reserveCapacity(6)
        if let priority { headers.append(HeaderField(HeaderName.priority, priority.headerValue)) }
        if let expiration { headers.append(HeaderField(HeaderName.expiration, expiration.headerValue)) }
        if let collapseID { headers.append(HeaderField(HeaderName.collapseID, collapseID.text)) }
        if let apnsID { headers.append(HeaderField(HeaderName.apnsID, apnsID.text)) }
        self.headers = headers
    }

    /// Checks a push as received (a simulator's view): parses every `apns-*` header and applies the
    /// same rules as the initialiser, so a sender and the simulator cannot disagree.
    public init(receivedHeaders: [HeaderField], payload: [UInt8]) throws(ValidationError) {
        var seen: Set<String> = []
        for field in receivedHeaders where field.name.hasPrefix("apns-") && !seen.insert(field.name).inserted {
            throw ValidationError(field: field.name, "appears twice; send each header once", reason: .duplicateHeaders)
        }
        guard let pushTypeText = receivedHeaders.value(named: HeaderName.pushType) else {
            throw ValidationError(field: HeaderName.pushType, "is missing; send it with every push", reason: .missingPushType)
        }
        guard let topic = receivedHeaders.value(named: HeaderName.topic) else {
            throw ValidationError(field: HeaderName.topic, "is missing; send the bundle ID with the push type's suffix", reason: .missingTopic)
        }
        /// The parsed value of header `name`, or nil when it is absent.
        func optional<Value>(_ name: String, _ parse: (String) throws(ValidationError) -> Value) throws(ValidationError) -> Value? {
            guard let text = receivedHeaders.value(named: name) else { return nil }
            return try parse(text)
        }
        // Exactly as Apple spells it: APNS.md §3 lists every `apns-push-type` value in lower case
        // (`alert`, `liveactivity`, …). Whether APNs also takes `Alert` is UNCONFIRMED; refusing it
        // is the stricter choice, so a sender that capitalises fails here before it fails at Apple.
        guard let pushType = PushType(rawValue: pushTypeText) else {
            let why = PushType(rawValue: pushTypeText.lowercased()).map { "push-type values are lower case: send '\($0.rawValue)'" }
                ?? "use one of \(PushType.allCases.map(\.rawValue).joined(separator: ", "))"
            throw ValidationError(field: HeaderName.pushType, "'\(HeaderValueText.printable(pushTypeText))' is not a push type; \(why)",
                                  reason: .invalidPushType)
        }
        let priority = try optional(HeaderName.priority) { (text) throws(ValidationError) in try Priority(headerValue: text) }
        let expiration = try optional(HeaderName.expiration) { (text) throws(ValidationError) in try Expiration(headerValue: text) }
        let collapseID = try optional(HeaderName.collapseID) { (text) throws(ValidationError) in try CollapseID(text) }
        let apnsID = try optional(HeaderName.apnsID) { (text) throws(ValidationError) in try APNsID(text) }
        try self.init(pushType: pushType, topic: topic, priority: priority, expiration: expiration,
                      collapseID: collapseID, apnsID: apnsID, payload: payload)
    }

    /// This push with its own `apns-id` (or none).
    public func with(apnsID: APNsID?) -> Notification {
        var copy = self
        copy.apnsID = apnsID
        copy.headers.removeAll { $0.name == HeaderName.apnsID }
        if let apnsID { copy.headers.append(HeaderField(HeaderName.apnsID, apnsID.text)) }
        return copy
    }

    /// The `:path` for `token`: `/3/device/<hex token>`.
    public static func path(for token: DeviceToken) -> String { token.path }
}

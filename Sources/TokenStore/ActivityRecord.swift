import APNs
/// A running Live Activity on one phone, known by the update token iOS gave it (iOS 17 updates
/// go per activity). It lives at most 8 hours: iOS ends an activity after that, so the record
/// expires then at the latest and is swept.
public struct ActivityRecord: Sendable, Equatable {
    public var id: String
    public var app: String
    public var environment: Environment
    public var updateToken: [UInt8]
    /// The event the activity shows (its updates and end go to this token).
    public var eventKey: String
    /// The event group (topic) the activity shows, so an update carries that group's content
    /// (nil: unknown; the event's first group is used).
    public var topic: String?
    /// Milliseconds since 1970.
    public var startedAt: UInt64
    /// Milliseconds since 1970; never more than 8 hours after `startedAt`.
    public private(set) var expiresAt: UInt64

    /// `expiresAt` is clamped to `startedAt` + 8 hours.
    public init(id: String, app: String, environment: Environment, updateToken: [UInt8], eventKey: String,
                startedAt: UInt64, expiresAt: UInt64? = nil, topic: String? = nil) {
        self.id = id
        self.app = app
        self.environment = environment
        self.updateToken = updateToken
        self.eventKey = eventKey
        self.topic = topic
        self.startedAt = startedAt
        let latest = startedAt + StoreLimits.maximumActivityLifetimeMilliseconds
        self.expiresAt = min(expiresAt ?? latest, latest)
    }

    func validate() throws(StoreError) {
        try StoreLimits.checkName(id, field: "activity id")
        try StoreLimits.checkName(app, field: "app")
        try StoreLimits.checkName(eventKey, field: "event key")
        try StoreLimits.checkToken(updateToken, field: "update token")
        if let topic { try StoreLimits.checkName(topic, field: "topic") }
    }

    var encoded: [UInt8] {
        var writer = RecordWriter()
        writer.string(app)
        writer.uint8(environment.storeByte)
        writer.data(updateToken)
        writer.string(eventKey)
        writer.uint64(startedAt)
        writer.uint64(expiresAt)
        // Appended last and only when known: records written before it existed still read.
        if let topic { writer.string(topic) }
        return writer.bytes
    }

    init(id: String, decoding bytes: UnsafeRawBufferPointer) throws(StoreError) {
        var reader = RecordReader(bytes, what: "activity '\(id)'")
        self.id = id
        app = try reader.string()
        environment = try reader.environment()
        updateToken = try reader.data()
        eventKey = try reader.string()
        startedAt = try reader.uint64()
        expiresAt = try reader.uint64()
        topic = reader.isAtEnd ? nil : try reader.string()
    }
}

import APNs
/// One change to the store, queued to the writer thread. Operations are values so the writer can
/// replay a whole batch after growing the map.
public enum WriteOperation: Sendable {
    /// Sets a token and the topics of an installation (creating it); `at` is the time in ms.
    case register(TokenRegistration, at: UInt64)
    /// Many registrations prepared (validated, sorted) on the caller's thread: an import.
    case registerBatch(RegistrationBatch)
    /// Removes a token APNs reported dead. With `registeredBefore` (a 410's `timestamp`, ms) the
    /// token is kept if it was registered at or after that moment; nil removes it regardless
    /// (400 `BadDeviceToken`).
    case removeToken(app: String, environment: Environment, kind: TokenKind, token: [UInt8], registeredBefore: UInt64?)
    /// Removes an installation with all its tokens.
    case removeInstallation(id: String)
    case putActivity(ActivityRecord)
    case removeActivity(id: String)
    case putChannel(ChannelRecord)
    case removeChannel(app: String, environment: Environment, name: String)
    /// Records what a serial of an event was and how it ended (see `EventSerialRecord`).
    case putEventSerial(EventSerialRecord)
    /// Checkpoints the starts of one topic of an event (see `StartProgress`).
    case putStartProgress(StartProgress)
    /// Records a segment of the phones an update or end has answers for (see `UpdateAnswers`).
    case putUpdateAnswers(UpdateAnswers)
    /// Removes every segment of a serial's update answers (it finished: nothing resumes it).
    case removeUpdateAnswers(eventKey: String, serial: UInt32)
    /// Removes every record of an event key (its serials and start progress).
    case removeEvent(eventKey: String)
    /// Removes expired activities, installations without tokens or not refreshed for
    /// `installationMaxAge` ms, and event records past their retention.
    case sweepExpired(now: UInt64, installationMaxAge: UInt64)

    /// How much work the operation is, for batching (a prepared batch counts its registrations).
    var weight: Int {
        if case let .registerBatch(batch) = self { return max(1, batch.count) }
        return 1
    }

    /// Checks the operation's values before it is queued, so a bad value fails its caller alone.
    func validate() throws(StoreError) {
        switch self {
        case let .register(registration, _): try registration.validate()
        case .registerBatch: break // validated when prepared
        case let .removeToken(app, _, kind, token, _):
            try StoreLimits.checkName(app, field: "app")
            try StoreLimits.checkToken(token, kind: kind)
        case let .removeInstallation(id), let .removeActivity(id): try StoreLimits.checkName(id, field: "id")
        case let .putActivity(activity): try activity.validate()
        case let .putChannel(channel): try channel.validate()
        case let .removeChannel(app, _, name):
            try StoreLimits.checkName(app, field: "app")
            try StoreLimits.checkName(name, field: "channel name")
        case let .putEventSerial(record): try StoreLimits.checkName(record.eventKey, field: "event key")
        case let .putStartProgress(progress):
            try StoreLimits.checkName(progress.eventKey, field: "event key")
            try StoreLimits.checkName(progress.topic, field: "topic name")
        case let .putUpdateAnswers(answers): try StoreLimits.checkName(answers.eventKey, field: "event key")
        case let .removeUpdateAnswers(eventKey, _): try StoreLimits.checkName(eventKey, field: "event key")
        case let .removeEvent(eventKey): try StoreLimits.checkName(eventKey, field: "event key")
        case .sweepExpired: break
        }
    }
}

/// What one operation did.
public enum WriteOutcome: Sendable, Equatable {
    case done
    /// For `removeToken`: whether the token was removed (false: unknown, or registered again
    /// after APNs' timestamp).
    case tokenRemoved(Bool)
    case swept(SweepCounts)
}

/// What `sweepExpired` removed.
public struct SweepCounts: Sendable, Equatable {
    public var installations = 0
    public var activities = 0
    public var events = 0
    public init(installations: Int = 0, activities: Int = 0, events: Int = 0) {
        self.installations = installations
        self.activities = activities
        self.events = events
    }
}

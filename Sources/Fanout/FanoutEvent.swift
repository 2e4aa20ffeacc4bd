import APNs
import JSONCore

/// One Live Activity event as a backend submits it (a JSON file for `sokuho fanout`, the same
/// object for the HTTP API): an earthquake warning's start, a widening update, the final end.
/// Parsed and checked whole before anything is sent; every error names its field.
public struct FanoutEvent: Sendable {
    public enum OnUnknown: String, Sendable {
        /// A start whose outcome is unknown is reported, never sent again (a duplicate start puts
        /// a second Live Activity on the phone).
        case report
        /// Sent again: for events where a missed warning is worse than a doubled one.
        case resend
    }

    /// One region (train, election race): who qualifies and what they are shown.
    public struct Group: Sendable {
        public enum Channel: Sendable, Equatable {
            /// Sokuho creates a Most-Recent-Message-Stored channel for this group and event.
            case auto
            case explicit(ChannelID)
        }

        public var topic: String
        /// Installations whose `minLevel` for the topic is at most this qualify.
        public var level: UInt8
        /// The app's `ContentState`, as JSON object bytes (required for start and update).
        public var contentState: [UInt8]?
        public var channel: Channel?
        public var staleDate: Int64?
        public var dismissalDate: Int64?
        public var relevanceScore: Double?
        /// Position in the event's list (ties of `level` go to the first listed).
        public var index: Int
    }

    public var app: BundleID
    public var environment: Environment
    public var key: String
    public var serial: UInt32
    public var kind: LiveActivityEvent
    public var deadline: Duration
    /// `apns-expiration` (epoch seconds); nil: the start of the run plus `deadline`.
    public var expiration: Int64?
    public var priority: Priority
    public var onUnknown: OnUnknown
    public var attributesType: String?
    public var attributes: [UInt8]?
    public var alert: LiveActivityAlert?
    public var inputPushToken: Bool
    public var fallbackAlert: LiveActivityAlert?
    /// `aps.timestamp` (epoch seconds); nil: the start of the run.
    public var timestamp: Int64?
    public var groups: [Group]
    /// SHA-256 input: the event's canonical JSON (members in document order, compact), so the
    /// same event reformatted is still the same event.
    public var canonicalJSON: [UInt8]
    /// The part of the event this run sends, in a cluster (`EventShard`); nil: all of it. Not part
    /// of the JSON: a backend submits whole events, the cluster splits them.
    public var shard: EventShard?

    /// The groups in the order starts are handed out: highest level first, ties in list order. A
    /// phone qualifying in several groups gets the first of them here.
    public var groupsByPriority: [Group] {
        groups.sorted { $0.level != $1.level ? $0.level > $1.level : $0.index < $1.index }
    }

    /// The longest event key, topic or group name the store takes.
    static let maximumNameBytes = 200

    /// Parses and checks an event from its JSON bytes.
    public init(json bytes: [UInt8]) throws(EventError) {
        let root: JSONValue
        do { root = try JSONParser.parse(bytes) } catch { throw EventError(field: "event", "is not valid JSON: \(error)") }
        var fields = try JSONObjectFields<EventError>(root, path: "", root: "event")
        app = try fields.required("app") { (value, field) throws(EventError) in
            guard let text = value.stringValue else { throw EventError(field: field, "must be the app's bundle ID as a string") }
            do throws(ValidationError) { return try BundleID(text) } catch { throw EventError(field: field, error.message) }
        }
        environment = try fields.required("environment") { (value, field) throws(EventError) in
            guard let text = value.stringValue else { throw EventError(field: field, "must be \"production\" or \"sandbox\"") }
            do { return try Environment(name: text) } catch { throw EventError(field: field, "must be \"production\" or \"sandbox\", not '\(text)'") }
        }
        key = try fields.required("key") { (value, field) throws(EventError) in try EventValues.key(value, field: field) }
        serial = try fields.optional("serial") { (value, field) throws(EventError) in
            guard let number = value.int64Value, (1...Int64(UInt32.max)).contains(number) else {
                throw EventError(field: field, "must be a whole number from 1 to \(UInt32.max) (the event's revision: 1, 2, 3 …)")
            }
            return UInt32(number)
        } ?? 1
        kind = try fields.required("kind") { (value, field) throws(EventError) in
            guard let text = value.stringValue, let kind = LiveActivityEvent(rawValue: text) else {
                throw EventError(field: field, "must be \"start\", \"update\" or \"end\"")
            }
            return kind
        }
        let deadlineSeconds = try fields.optional("deadlineSeconds") { (value, field) throws(EventError) in
            guard let seconds = value.doubleValue, seconds.isFinite, seconds >= 1, seconds <= 8 * 3600 else {
                throw EventError(field: field, "must be a number of seconds from 1 to 28800 (8 hours, a Live Activity's longest life)")
            }
            return seconds
        } ?? 60
        deadline = .milliseconds(Int64(deadlineSeconds * 1000))
        expiration = try fields.optional("expiration") { (value, field) throws(EventError) in try EventValues.epoch(value, field: field) }
        timestamp = try fields.optional("timestamp") { (value, field) throws(EventError) in try EventValues.epoch(value, field: field) }
        priority = try fields.optional("priority") { (value, field) throws(EventError) in
            guard let number = value.int64Value, number == 5 || number == 10 else {
                throw EventError(field: field, "must be 10 (immediate) or 5 (outside the update budget); a Live Activity push takes no other")
            }
            return number == 5 ? .normal : .immediate
        } ?? .immediate
        onUnknown = try fields.optional("onUnknown") { (value, field) throws(EventError) in
            guard let text = value.stringValue, let choice = OnUnknown(rawValue: text) else {
                throw EventError(field: field, "must be \"report\" (the default: never send a start twice) or \"resend\"")
            }
            return choice
        } ?? .report
        attributesType = try fields.optional("attributesType") { (value, field) throws(EventError) in
            guard let text = value.stringValue, !text.isEmpty else { throw EventError(field: field, "must be the name of the app's ActivityAttributes type") }
            return text
        }
        attributes = try fields.optional("attributes") { (value, field) throws(EventError) in try EventValues.object(value, field: field) }
        alert = try fields.optional("alert") { (value, field) throws(EventError) in try EventValues.alert(value, field: field) }
        inputPushToken = try fields.optional("inputPushToken") { (value, field) throws(EventError) in
            guard let flag = value.boolValue else { throw EventError(field: field, "must be true or false") }
            return flag
        } ?? false
        fallbackAlert = try fields.optional("fallbackAlert") { (value, field) throws(EventError) in
            if value == .null { return nil }
            return try EventValues.alert(value, field: field)
        } ?? nil
        let groupValues = try fields.required("groups") { (value, field) throws(EventError) in
            guard let array = value.arrayValue, !array.isEmpty else { throw EventError(field: field, "must be a non-empty array of groups") }
            return array
        }
        var groups: [Group] = []
        for (index, value) in groupValues.enumerated() {
            groups.append(try Self.group(value, index: index))
        }
        self.groups = groups
        try fields.rejectUnknown()
        var writer = JSONWriter(reservingCapacity: bytes.count)
        writer.value(root)
        canonicalJSON = writer.bytes
        try checkKindRules()
    }

    private static func group(_ value: JSONValue, index: Int) throws(EventError) -> Group {
        var fields = try JSONObjectFields<EventError>(value, path: "groups[\(index)]", root: "event")
        let topic = try fields.required("topic") { (value, field) throws(EventError) in try EventValues.name(value, field: field) }
        let level = try fields.required("level") { (value, field) throws(EventError) in
            guard let number = value.int64Value, (0...255).contains(number) else {
                throw EventError(field: field, "must be a whole number from 0 to 255 (installations with minLevel up to it qualify)")
            }
            return UInt8(number)
        }
        let state = try fields.optional("contentState") { (value, field) throws(EventError) in try EventValues.object(value, field: field) }
        let channel = try fields.optional("channel") { (value, field) throws(EventError) -> Group.Channel? in
            if value == .null { return nil }
            guard let text = value.stringValue else { throw EventError(field: field, "must be \"auto\", a channel ID or null") }
            if text == "auto" { return .auto }
            do throws(ValidationError) { return .explicit(try ChannelID(text)) } catch { throw EventError(field: field, error.message) }
        } ?? nil
        let stale = try fields.optional("staleDate") { (value, field) throws(EventError) in try EventValues.epoch(value, field: field) }
        let dismissal = try fields.optional("dismissalDate") { (value, field) throws(EventError) in try EventValues.epoch(value, field: field) }
        let relevance = try fields.optional("relevanceScore") { (value, field) throws(EventError) in
            guard let number = value.doubleValue, number.isFinite else { throw EventError(field: field, "must be a number") }
            return number
        }
        try fields.rejectUnknown()
        return Group(topic: topic, level: level, contentState: state, channel: channel, staleDate: stale, dismissalDate: dismissal,
                     relevanceScore: relevance, index: index)
    }

    /// What each kind needs, and the rules that hold across groups.
    private func checkKindRules() throws(EventError) {
        if kind == .start {
            guard attributesType != nil else { throw EventError(field: "attributesType", "is required for a start (the ActivityAttributes type)") }
            guard attributes != nil else { throw EventError(field: "attributes", "is required for a start (the static attributes object)") }
            guard alert != nil else { throw EventError(field: "alert", "is required for a start (APNs needs an alert to start an activity)") }
        }
        for group in groups where kind != .end && group.contentState == nil {
            throw EventError(field: "groups[\(group.index)].contentState", "is required for \(kind == .start ? "a start" : "an update")")
        }
        for group in groups where kind != .end && group.dismissalDate != nil {
            throw EventError(field: "groups[\(group.index)].dismissalDate", "only applies to an end; remove it or use staleDate")
        }
        for (index, group) in groups.enumerated() {
            if let earlier = groups[..<index].first(where: { $0.topic == group.topic }) {
                throw EventError(field: "groups[\(index)].topic", "'\(group.topic)' is already groups[\(earlier.index)]; give each topic one group")
            }
            // One explicit channel carries one message: two groups sending different content to it
            // would overwrite each other on every phone subscribed.
            if case .explicit(let id)? = group.channel,
               let other = groups[..<index].first(where: { $0.channel == .explicit(id) && $0.contentState != group.contentState }) {
                throw EventError(field: "groups[\(index)].channel",
                                 "'\(id.text)' is also groups[\(other.index)]'s channel with other content; one channel carries one content")
            }
        }
    }
}

/// An invalid event: the field (a JSON path like `groups[2].level`) and what to do about it.
public struct EventError: Error, Sendable, Equatable, CustomStringConvertible {
    public let field: String
    public let message: String

    public init(field: String, _ message: String) {
        self.field = field
        self.message = message
    }

    public var description: String { "\(field): \(message)" }
}

/// Events and the daemon's API bodies are read by JSONCore's one strict reader, refusing in these terms.
extension EventError: JSONFieldError {}

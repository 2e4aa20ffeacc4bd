/// The `aps` keys of a Live Activity push and which event requires, allows or forbids each
/// (APNS.md §8.2). The payload builder and the validator of ready-made payloads both check against
/// this one table, so what Sokuho renders and what it accepts from a file cannot drift apart.
public enum LiveActivityKey: String, Sendable, CaseIterable {
    case timestamp
    case event
    case relevanceScore = "relevance-score"
    case staleDate = "stale-date"
    case dismissalDate = "dismissal-date"
    case attributesType = "attributes-type"
    case attributes
    case inputPushToken = "input-push-token"
    case inputPushChannel = "input-push-channel"
    case alert
    case contentState = "content-state"

    public enum Presence: Sendable {
        case required, optional, forbidden
    }

    public func presence(in event: LiveActivityEvent) -> Presence {
        switch (self, event) {
        case (.timestamp, _), (.event, _): .required
        case (.contentState, .start), (.contentState, .update): .required
        case (.contentState, .end): .optional  // recommended: the final state
        case (.attributesType, .start), (.attributes, .start), (.alert, .start): .required
        case (.attributesType, _), (.attributes, _): .forbidden
        case (.alert, _): .optional
        case (.inputPushToken, .start), (.inputPushChannel, .start): .optional
        case (.inputPushToken, _), (.inputPushChannel, _): .forbidden
        case (.staleDate, .end), (.relevanceScore, .end): .forbidden
        case (.staleDate, _), (.relevanceScore, _): .optional
        case (.dismissalDate, .end): .optional
        case (.dismissalDate, _): .forbidden
        }
    }

    /// The payload field name used in errors: `aps.content-state`.
    public var field: String { "aps." + rawValue }

    /// What the key holds, for "is missing; give …" messages.
    var meaning: String {
        switch self {
        case .timestamp: "the time of this update in seconds since the epoch"
        case .event: "start, update or end"
        case .relevanceScore: "a number that orders this app's Live Activities"
        case .staleDate: "the time (epoch seconds) the content goes stale"
        case .dismissalDate: "the time (epoch seconds) the ended Live Activity leaves the Lock Screen"
        case .attributesType: "the name of the app's ActivityAttributes struct"
        case .attributes: "the static ActivityAttributes as a JSON object"
        case .inputPushToken: "the number 1, to get an update token for the started activity"
        case .inputPushChannel: "the broadcast channel ID to subscribe the activity to"
        case .alert: "an alert with a title and a body, so the person sees why a Live Activity appeared"
        case .contentState: "the app's ContentState as a JSON object"
        }
    }

    /// Throws for the first key that `event` requires but `has` says is absent, or forbids but is
    /// present, and for a start sent by broadcast, which APNs cannot do.
    public static func check(event: LiveActivityEvent, destination: PayloadDestination,
                             has: (LiveActivityKey) -> Bool) throws(ValidationError) {
        if event == .start, destination == .broadcast {
            throw ValidationError(field: LiveActivityKey.event.field,
                                  "is start, but a broadcast cannot start a Live Activity; send the start by push-to-start to /3/device (with input-push-channel to subscribe it to the channel)")
        }
        for key in allCases {
            switch key.presence(in: event) {
            case .required where !has(key):
                throw ValidationError(field: key.field, "is missing; \(event.article) \(event.rawValue) event needs \(key.meaning)")
            case .forbidden where has(key):
                let takers = LiveActivityEvent.allCases.filter { key.presence(in: $0) != .forbidden }.map(\.rawValue)
                throw ValidationError(field: key.field,
                                      "is not allowed in \(event.article) \(event.rawValue) event (only \(takers.joined(separator: " and ")) take it); remove it")
            default:
                continue
            }
        }
    }
}

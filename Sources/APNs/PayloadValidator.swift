import JSONCore

/// Checks a ready-made body (`sokuho send --payload FILE`, or what the simulator receives) against
/// the rules a sender must follow: the size limit, valid JSON, an `aps` object where the push type
/// needs one, and for Live Activities the event's required and forbidden keys and their types.
///
/// The reason each mistake carries follows APNS.md §9.3's split: "`BadRequestPayload` | unparseable
/// JSON body" only for a body that is not JSON (or not a JSON object), and "`BadRequestParams` |
/// unrecognised attribute in the JSON body" for well-formed JSON whose `aps` content is wrong. Apple's
/// device-push table (§4) names neither; the same split is assumed there (UNCONFIRMED: Apple may
/// even accept such a push and let the device drop it; refusing it is the stricter choice).
public enum PayloadValidator {
    /// What a valid payload turned out to be.
    public struct Summary: Sendable, Equatable {
        /// The Live Activity event, for liveactivity payloads.
        public let event: LiveActivityEvent?
        /// `aps.timestamp` in seconds, for liveactivity payloads.
        public let timestamp: Int64?
        /// Whether the payload carries `aps.input-push-token` (a start asking for an update token).
        public internal(set) var carriesInputPushToken = false
        /// Whether the payload carries `aps.input-push-channel` (a start subscribing to a channel).
        public internal(set) var carriesInputPushChannel = false
    }

    public static func validate<Bytes: Collection>(_ payload: Bytes, for destination: PayloadDestination) throws(ValidationError) -> Summary
    where Bytes.Element == UInt8 {
        try destination.checkSize(payload.count)
        let root: JSONValue
        do {
            root = try JSONParser.parse(payload)
        } catch {
            throw ValidationError(field: "payload", "is not valid JSON: \(error)", reason: .badRequestPayload)
        }
        guard root.isObject else {
            throw ValidationError(field: "payload", "is \(kind(root)); give a JSON object such as {\"aps\":{…}}", reason: .badRequestPayload)
        }
        let pushType = destination.pushType
        guard pushType.requiresAPSDictionary else { return Summary(event: nil, timestamp: nil) }
        guard let aps = root["aps"] else {
            throw ValidationError(field: "aps", "is missing; a \(pushType.rawValue) payload keeps its keys in {\"aps\":{…}}", reason: .badRequestParams)
        }
        guard aps.isObject else {
            throw ValidationError(field: "aps", "is \(kind(aps)); it must be a JSON object {…}", reason: .badRequestParams)
        }
        guard pushType == .liveactivity else { return Summary(event: nil, timestamp: nil) }
        do {
            return try validateLiveActivity(aps, destination: destination)
        } catch {
            // Well-formed JSON with wrong Live Activity content: BadRequestParams, not BadRequestPayload.
            throw error.reason == nil ? ValidationError(field: error.field, error.message, reason: .badRequestParams) : error
        }
    }

    private static func validateLiveActivity(_ aps: JSONValue, destination: PayloadDestination) throws(ValidationError) -> Summary {
        guard let eventValue = aps[LiveActivityKey.event.rawValue] else {
            throw ValidationError(field: LiveActivityKey.event.field, "is missing; give \(LiveActivityKey.event.meaning)")
        }
        guard let text = eventValue.stringValue, let event = LiveActivityEvent(rawValue: text) else {
            throw ValidationError(field: LiveActivityKey.event.field, "is \(eventValue.jsonText); give \(LiveActivityKey.event.meaning)")
        }
        try LiveActivityKey.check(event: event, destination: destination) { aps[$0.rawValue] != nil }
        var timestamp: Int64 = 0
        for key in LiveActivityKey.allCases {
            guard let value = aps[key.rawValue] else { continue }
            switch key {
            case .event:
                continue
            case .timestamp, .staleDate, .dismissalDate:
                let seconds = try epochSeconds(value, key: key)
                if key == .timestamp { timestamp = seconds }
            case .relevanceScore:
                try expect(value.doubleValue != nil, key, value, "a number")
            case .attributesType:
                try expect(!(value.stringValue ?? "").isEmpty, key, value, "a non-empty string: \(key.meaning)")
            case .attributes, .contentState, .alert:
                try expect(value.isObject, key, value, "a JSON object: \(key.meaning)")
            case .inputPushToken:
                try expect(value.int64Value == 1, key, value, "the number 1")
            case .inputPushChannel:
                guard let channel = value.stringValue, (try? ChannelID(channel)) != nil else {
                    throw ValidationError(field: key.field, "is \(printable(value)); give \(key.meaning) as a base64 string")
                }
            }
        }
        return Summary(event: event, timestamp: timestamp, carriesInputPushToken: aps[LiveActivityKey.inputPushToken.rawValue] != nil,
                       carriesInputPushChannel: aps[LiveActivityKey.inputPushChannel.rawValue] != nil)
    }

    private static func epochSeconds(_ value: JSONValue, key: LiveActivityKey) throws(ValidationError) -> Int64 {
        guard let number = value.doubleValue, number.isFinite, abs(number) < 9e18 else {
            throw ValidationError(field: key.field, "is \(value.jsonText); give \(key.meaning)")
        }
        let seconds = value.int64Value ?? Int64(number)
        try EpochSeconds.check(seconds, field: key.field)
        return seconds
    }

    private static func expect(_ condition: Bool, _ key: LiveActivityKey, _ value: JSONValue, _ wanted: String) throws(ValidationError) {
        guard condition else { throw ValidationError(field: key.field, "is \(printable(value)); give \(wanted)") }
    }

    private static func printable(_ value: JSONValue) -> String {
        let text = value.jsonText
        return text.count > 60 ? String(text.prefix(60)) + "…" : text
    }

    private static func kind(_ value: JSONValue) -> String {
        switch value {
        case .null: "null"
        case .bool: "a boolean"
        case .number: "a number"
        case .string: "a string"
        case .array: "an array"
        case .object: "an object"
        }
    }
}

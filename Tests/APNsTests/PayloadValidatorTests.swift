import Testing
@testable import APNs

/// Ready-made payloads (`sokuho send --payload`, what the simulator receives) are checked against the
/// same rules as rendered ones.
@Suite struct PayloadValidatorTests {
    @Test(arguments: [
        ("eew-start.json", LiveActivityEvent.start, Int64(1_787_418_000)),
        ("eew-update.json", .update, 1_787_418_004),
        ("eew-end.json", .end, 1_787_418_060),
        ("train-update.json", .update, 1_784_453_400),
        ("election-update.json", .update, 1_770_555_600),
    ])
    func examplesAreValidLiveActivityPayloads(name: String, event: LiveActivityEvent, timestamp: Int64) throws {
        let payload = try #require(ExamplePayloads.byName[name])
        let summary = try PayloadValidator.validate(payload, for: .device(.liveactivity))
        #expect(summary.event == event)
        #expect(summary.timestamp == timestamp)
        if event != .start {
            #expect(try PayloadValidator.validate(payload, for: .broadcast).event == event)
        }
    }

    /// A JSON value for every key, valid for the key's type.
    static let values: [LiveActivityKey: String] = [
        .timestamp: "1787418000", .relevanceScore: "12.5", .staleDate: "1787418600", .dismissalDate: "1787419800",
        .attributesType: #""EewLiveActivityAttributes""#, .attributes: #"{"id":"x"}"#, .inputPushToken: "1",
        .inputPushChannel: #""dHN0LWNoYW5uZWwtcmVnaW9uLTMwMQ==""#, .alert: #"{"title":"t","body":"b"}"#,
        .contentState: #"{"serialNo":1}"#,
    ]

    /// `{"aps":{…}}` with `event` and the given keys.
    static func payload(_ event: LiveActivityEvent, keys: [LiveActivityKey]) -> [UInt8] {
        let members = [#""event":"\#(event.rawValue)""#] + keys.filter { $0 != .event }.map { #""\#($0.rawValue)":\#(values[$0]!)"# }
        return Array(#"{"aps":{\#(members.joined(separator: ","))}}"#.utf8)
    }

    @Test(arguments: LiveActivityEvent.allCases, LiveActivityKey.allCases)
    func validatorEnforcesRequiredAndForbiddenKeys(event: LiveActivityEvent, key: LiveActivityKey) throws {
        guard key != .event else { return }
        let required = LiveActivityKey.allCases.filter { $0.presence(in: event) == .required }
        _ = try PayloadValidator.validate(Self.payload(event, keys: required), for: .device(.liveactivity))
        switch key.presence(in: event) {
        case .required:
            #expect {
                try PayloadValidator.validate(Self.payload(event, keys: required.filter { $0 != key }), for: .device(.liveactivity))
            } throws: { error in
                let error = error as! ValidationError
                return error.field == "aps.\(key.rawValue)" && error.message.contains("is missing")
            }
        case .forbidden:
            #expect {
                try PayloadValidator.validate(Self.payload(event, keys: required + [key]), for: .device(.liveactivity))
            } throws: { error in
                let error = error as! ValidationError
                return error.field == "aps.\(key.rawValue)" && error.message.contains("not allowed")
            }
        case .optional:
            _ = try PayloadValidator.validate(Self.payload(event, keys: required + [key]), for: .device(.liveactivity))
        }
    }

    @Test(arguments: [
        (LiveActivityKey.timestamp, #""now""#), (.timestamp, "1787418000000"), (.staleDate, "true"),
        (.relevanceScore, #""high""#), (.contentState, "[1]"), (.alert, #""hi""#), (.inputPushToken, "2"),
        (.inputPushChannel, "5"), (.inputPushChannel, #""not base64!""#), (.attributesType, #""""#), (.attributes, "null"),
    ])
    func wrongTypeIsRefusedNamingTheKey(key: LiveActivityKey, json: String) {
        var values = Self.values
        values[key] = json
        let members = LiveActivityKey.allCases.filter { $0.presence(in: .start) != .forbidden && $0 != .event }
            .map { #""\#($0.rawValue)":\#(values[$0]!)"# }
        let payload = Array(#"{"aps":{"event":"start",\#(members.joined(separator: ","))}}"#.utf8)
        #expect {
            try PayloadValidator.validate(payload, for: .device(.liveactivity))
        } throws: { error in
            let error = error as! ValidationError
            return error.field == "aps.\(key.rawValue)" && error.message.hasPrefix("is \(json)")
        }
    }

    @Test(arguments: [
        (#"{"aps":{"timestamp":1,"event":"begin","content-state":{}}}"#, "aps.event"),
        (#"{"aps":{"timestamp":1,"content-state":{}}}"#, "aps.event"),
        (#"{"aps":[]}"#, "aps"),
        (#"{"alert":"hi"}"#, "aps"),
        (#"[{"aps":{}}]"#, "payload"),
        (#"{"aps":{"event":"update",}}"#, "payload"),
    ])
    func malformedLiveActivityPayloadIsRefused(json: String, field: String) {
        #expect {
            try PayloadValidator.validate(Array(json.utf8), for: .device(.liveactivity))
        } throws: { error in
            (error as! ValidationError).field == field
        }
    }

    @Test func otherPushTypesNeedApsOnlyWhereAppleDefinesIt() throws {
        _ = try PayloadValidator.validate(Array(#"{"aps":{"alert":{"title":"t","body":"b"}}}"#.utf8), for: .device(.alert))
        _ = try PayloadValidator.validate(Array(#"{"aps":{"content-available":1}}"#.utf8), for: .device(.background))
        #expect(throws: ValidationError.self) { try PayloadValidator.validate(Array(#"{"alert":"hi"}"#.utf8), for: .device(.alert)) }
        // PushKit and MDM bodies are the app's or the OS's own JSON.
        _ = try PayloadValidator.validate(Array(#"{"callerName":"A"}"#.utf8), for: .device(.voip))
        _ = try PayloadValidator.validate(Array(#"{"mdm":"3f7a2c1e"}"#.utf8), for: .device(.mdm))
        #expect(throws: ValidationError.self) { try PayloadValidator.validate(Array("[]".utf8), for: .device(.voip)) }
    }
}

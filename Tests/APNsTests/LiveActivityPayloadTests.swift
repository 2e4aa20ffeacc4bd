import JSONCore
import Testing
@testable import APNs

/// The Live Activity body builder (APNS.md §8.2): the real example payloads come out byte for byte,
/// the app's JSON is embedded verbatim, and each event's required and forbidden keys are enforced.
@Suite struct LiveActivityPayloadTests {
    /// APNS.md §8.2 as a table, independent of `LiveActivityKey.presence(in:)`: R required, O optional, - forbidden.
    static let documentedPresence: [LiveActivityKey: (start: Character, update: Character, end: Character)] = [
        .event: ("R", "R", "R"),
        .timestamp: ("R", "R", "R"),
        .contentState: ("R", "R", "O"),
        .attributesType: ("R", "-", "-"),
        .attributes: ("R", "-", "-"),
        .alert: ("R", "O", "O"),
        .staleDate: ("O", "O", "-"),
        .dismissalDate: ("-", "-", "O"),
        .relevanceScore: ("O", "O", "-"),
        .inputPushToken: ("O", "-", "-"),
        .inputPushChannel: ("O", "-", "-"),
    ]

    static func documented(_ key: LiveActivityKey, _ event: LiveActivityEvent) -> LiveActivityKey.Presence {
        let row = documentedPresence[key]!
        let mark = switch event {
        case .start: row.start
        case .update: row.update
        case .end: row.end
        }
        return mark == "R" ? .required : mark == "O" ? .optional : .forbidden
    }

    static let channel = try! ChannelID("dHN0LWNoYW5uZWwtcmVnaW9uLTMwMQ==")
    static let state = Array(#"{"serialNo":1}"#.utf8)

    /// A payload of `event` with every required key and nothing else.
    static func minimal(_ event: LiveActivityEvent) -> LiveActivityPayload {
        switch event {
        case .start: .start(timestamp: 1_787_418_000, attributesType: "EewLiveActivityAttributes", attributes: Array(#"{"id":"x"}"#.utf8),
                            contentState: state, alert: LiveActivityAlert(title: "t", body: "b"))
        case .update: .update(timestamp: 1_787_418_000, contentState: state)
        case .end: .end(timestamp: 1_787_418_000, contentState: nil)
        }
    }

    /// `payload` with `key` set (`present`) or removed.
    static func setting(_ key: LiveActivityKey, present: Bool, in payload: LiveActivityPayload) -> LiveActivityPayload {
        var payload = payload
        switch key {
        case .timestamp, .event: break  // always written; covered by the validator tests
        case .contentState: payload.contentState = present ? state : nil
        case .attributesType: payload.attributesType = present ? "EewLiveActivityAttributes" : nil
        case .attributes: payload.attributes = present ? Array(#"{"id":"x"}"#.utf8) : nil
        case .alert: payload.alert = present ? LiveActivityAlert(title: "t", body: "b") : nil
        case .staleDate: payload.staleDate = present ? 1_787_418_600 : nil
        case .dismissalDate: payload.dismissalDate = present ? 1_787_419_800 : nil
        case .relevanceScore: payload.relevanceScore = present ? 50 : nil
        case .inputPushToken: payload.requestsUpdateToken = present
        case .inputPushChannel: payload.inputPushChannel = present ? channel : nil
        }
        return payload
    }

    @Test(arguments: LiveActivityEvent.allCases, LiveActivityKey.allCases)
    func keyRuleMatchesTheDocumentation(event: LiveActivityEvent, key: LiveActivityKey) {
        #expect(key.presence(in: event) == Self.documented(key, event))
    }

    @Test(arguments: LiveActivityEvent.allCases, LiveActivityKey.allCases)
    func builderEnforcesRequiredAndForbiddenKeys(event: LiveActivityEvent, key: LiveActivityKey) throws {
        guard key != .timestamp, key != .event else { return }
        let base = Self.minimal(event)
        let rendered = try base.render()
        #expect(try PayloadValidator.validate(rendered, for: .device(.liveactivity)).event == event)
        switch key.presence(in: event) {
        case .required:
            #expect {
                try Self.setting(key, present: false, in: base).render()
            } throws: { error in
                let error = error as! ValidationError
                return error.field == "aps.\(key.rawValue)" && error.message.contains("is missing; \(event == .start ? "a" : "an") \(event.rawValue) event needs")
            }
        case .forbidden:
            #expect {
                try Self.setting(key, present: true, in: base).render()
            } throws: { error in
                let error = error as! ValidationError
                return error.field == "aps.\(key.rawValue)" && error.message.contains("not allowed in \(event == .start ? "a" : "an") \(event.rawValue) event")
                    && error.message.contains("remove it")
            }
        case .optional:
            let with = try Self.setting(key, present: true, in: base).render()
            #expect(String(decoding: with, as: UTF8.self).contains("\"\(key.rawValue)\":"))
        }
    }

    /// Splits an example into the builder's inputs (the app's objects are taken as their exact text).
    static func aps(_ example: [UInt8]) throws -> JSONValue { try #require(try JSONParser.parse(example)["aps"]) }
    static func text(_ value: JSONValue?) throws -> [UInt8] { Array(try #require(value).jsonText.utf8) }

    @Test func eewStartIsRenderedByteForByte() throws {
        let aps = try Self.aps(ExamplePayloads.eewStart)
        let alert = try #require(aps["alert"])
        var payload = LiveActivityPayload.start(
            timestamp: 1_787_418_000, attributesType: "EewLiveActivityAttributes", attributes: try Self.text(aps["attributes"]),
            contentState: try Self.text(aps["content-state"]),
            alert: LiveActivityAlert(title: try #require(alert["title"]?.stringValue), body: try #require(alert["body"]?.stringValue), sound: "default"))
        payload.inputPushChannel = Self.channel
        #expect(try payload.render() == ExamplePayloads.eewStart)
    }

    @Test func eewUpdateAndEndAreRenderedByteForByte() throws {
        let update = LiveActivityPayload.update(timestamp: 1_787_418_004, contentState: try Self.text(Self.aps(ExamplePayloads.eewUpdate)["content-state"]))
        #expect(try update.render(for: .broadcast) == ExamplePayloads.eewUpdate)
        let end = LiveActivityPayload.end(timestamp: 1_787_418_060, contentState: try Self.text(Self.aps(ExamplePayloads.eewEnd)["content-state"]),
                                          dismissalDate: 1_787_419_860)
        #expect(try end.render(for: .broadcast) == ExamplePayloads.eewEnd)
    }

    @Test func trainAndElectionUpdatesAreRenderedByteForByte() throws {
        var train = LiveActivityPayload.update(timestamp: 1_784_453_400, contentState: try Self.text(Self.aps(ExamplePayloads.trainUpdate)["content-state"]))
        train.staleDate = 1_784_453_520
        #expect(try train.render() == ExamplePayloads.trainUpdate)
        var election = LiveActivityPayload.update(timestamp: 1_770_555_600,
                                                  contentState: try Self.text(Self.aps(ExamplePayloads.electionUpdate)["content-state"]))
        election.relevanceScore = 75
        #expect(try election.render(for: .broadcast) == ExamplePayloads.electionUpdate)
    }

    @Test(arguments: [
        #"{"b":1.50,"a":1e3}"#,
        #"{ "z" : 0.10 , "a" : [1E+2, -0.0], "m": {"y": 2.500, "x": "\u00e9"} }"#,
    ])
    func contentStateIsEmbeddedExactly(state: String) throws {
        let body = try LiveActivityPayload.update(timestamp: 1_787_418_004, contentState: Array(state.utf8)).render()
        #expect(String(decoding: body, as: UTF8.self) == #"{"aps":{"timestamp":1787418004,"event":"update","content-state":\#(state)}}"#)
    }

    @Test func whitespaceAroundTheAppsObjectIsDropped() throws {
        let body = try LiveActivityPayload.update(timestamp: 1, contentState: Array(" \n{\"b\":1.50}\n".utf8)).render()
        #expect(String(decoding: body, as: UTF8.self) == #"{"aps":{"timestamp":1,"event":"update","content-state":{"b":1.50}}}"#)
    }

    /// Valid JSON the phones cannot decode: a key twice (Android's org.json throws; which one
    /// Codable keeps is not defined) and a number out of a Double's range (JSONDecoder throws).
    @Test(arguments: [(#"{"a":1,"a":2}"#, "aps.content-state", "twice"), (#"{"b":{"x":[{"c":1,"c":1}]}}"#, "aps.content-state.b.x[0]", "twice"),
                      (#"{"a":1e999}"#, "aps.content-state.a", "1e999"), (#"{"a":[-1E400]}"#, "aps.content-state.a[0]", "-1E400")])
    func contentStateThePhonesCannotDecodeIsRefusedNamingWhere(state: String, field: String, says: String) {
        #expect {
            try LiveActivityPayload.update(timestamp: 1, contentState: Array(state.utf8)).render()
        } throws: { error in
            let error = error as! ValidationError
            return error.field == field && error.message.contains(says)
        }
        // A large finite number and the same key in two objects are fine.
        #expect(throws: Never.self) {
            try LiveActivityPayload.update(timestamp: 1, contentState: Array(#"{"a":1e300,"b":{"a":1},"c":{"a":2}}"#.utf8)).render()
        }
    }

    @Test(arguments: [#"[1,2]"#, #"{"a":1"#, #""text""#, "", #"{"a":1} {"b":2}"#])
    func contentStateThatIsNotOneJSONObjectIsRefused(state: String) {
        #expect {
            try LiveActivityPayload.update(timestamp: 1, contentState: Array(state.utf8)).render()
        } throws: { error in
            let error = error as! ValidationError
            return error.field == "aps.content-state" && error.message.contains("is not a JSON object")
        }
    }

    @Test func attributesThatAreNotAnObjectAreRefused() {
        var start = Self.minimal(.start)
        start.attributes = Array("[]".utf8)
        #expect {
            try start.render()
        } throws: { error in
            (error as! ValidationError).field == "aps.attributes"
        }
    }

    @Test func startWithUpdateTokenAndLocalizedAlert() throws {
        var start = Self.minimal(.start)
        start.requestsUpdateToken = true
        start.alert = LiveActivityAlert(title: .localized(key: "EEW_TITLE", arguments: ["茨城県南部"]), body: .plain("強い揺れ"), sound: "chime.aiff")
        let text = String(decoding: try start.render(), as: UTF8.self)
        #expect(text.contains(#""input-push-token":1,"#))
        #expect(text.contains(#""alert":{"title":{"loc-key":"EEW_TITLE","loc-args":["茨城県南部"]},"body":"強い揺れ","sound":"chime.aiff"}"#))
    }

    @Test func broadcastCannotStartALiveActivity() {
        #expect {
            try Self.minimal(.start).render(for: .broadcast)
        } throws: { error in
            let error = error as! ValidationError
            return error.field == "aps.event" && error.message.contains("push-to-start")
        }
        #expect(throws: ValidationError.self) { try PayloadValidator.validate(ExamplePayloads.eewStart, for: .broadcast) }
    }

    @Test(arguments: [
        (1_787_418_000_000, "milliseconds"),
        (-5, "negative"),
    ])
    func datesMustBeEpochSeconds(value: Int64, words: String) {
        #expect {
            try LiveActivityPayload.update(timestamp: value, contentState: Self.state).render()
        } throws: { error in
            let error = error as! ValidationError
            return error.field == "aps.timestamp" && error.message.contains(words)
        }
        var end = Self.minimal(.end)
        end.dismissalDate = value
        #expect(throws: ValidationError.self) { try end.render() }
    }

    @Test func aLiveActivityPayloadOnlyGoesToLiveActivityPushes() {
        #expect {
            try Self.minimal(.update).render(for: .device(.alert))
        } throws: { error in
            (error as! ValidationError).field == "apns-push-type"
        }
    }
}

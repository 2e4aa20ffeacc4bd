import JSONCore
import Simulator
import SokuhoCLI
import Testing

/// Issue 24: ActivityKit gives an activity exactly one push type (`.token` or `.channel(id)`), so a
/// start carries `input-push-channel` or `input-push-token`, never both — the simulator refuses both
/// (the stricter reading, as an independent strict APNs does). And `fanout --topic` restates the
/// event's app or is refused.
@Suite struct StartPushTypeTests {
    /// Eight phones: four in region:0 (a channel group), four in region:1 (no channel); in each,
    /// three on iOS 18 and one on iOS 17.
    static func phones() -> [FanoutScenario.Phone] {
        (0..<8).map { n in
            FanoutScenario.Phone(id: "install-\(n)", token: FanoutScenario.token(n), topics: [("region:\(n / 4)", 0)], broadcast: n % 4 != 3)
        }
    }

    /// A start asking for update tokens, to a group with an auto channel and a group without one.
    static let mixedStart = #"{"app":"\#(testBundle)","environment":"production","key":"eew-mixed","serial":1,"kind":"start","deadlineSeconds":30,"attributesType":"EewAttributes","attributes":{"id":"eew-mixed"},"alert":{"title":"Earthquake","body":"Strong shaking expected"},"inputPushToken":true,"groups":[{"topic":"region:0","level":3,"channel":"auto","contentState":{"text":"zero"}},{"topic":"region:1","level":3,"channel":null,"contentState":{"text":"one"}}]}"#

    @Test func aChannelGroupsStartsCarryOnlyTheChannelAndAGroupWithoutOneAsksForTheUpdateToken() throws {
        let scenario = try FanoutScenario()
        try scenario.register(Self.phones())
        let run = scenario.fanout(scenario.event("start.json", Self.mixedStart))
        #expect(run.code == .success, "\(run)")
        // The simulator refuses a start with both keys: every start accepted means none had both.
        #expect(scenario.running.counters.accepted == Self.phones().count)
        #expect(scenario.running.counters.rejectedTotal == 0, "\(scenario.running.counters.rejected)")
        let pushes = scenario.devicePushes()
        for phone in Self.phones() {
            let received = pushes[phone.token] ?? []
            try #require(received.count == 1, "\(phone.id) got \(received.count) starts")
            let aps = received[0].body["aps"]
            #expect(aps?["event"]?.stringValue == "start")
            let channelGroup = phone.topics[0].0 == "region:0"
            // A channel group's iOS 18 phones: the channel and no token request, though the event asks.
            #expect((aps?["input-push-channel"] != nil) == (channelGroup && phone.broadcast), "\(phone.id)")
            if channelGroup || !phone.broadcast {
                #expect(aps?["input-push-token"] == nil, "\(phone.id)")
            } else {
                #expect(aps?["input-push-token"]?.int64Value == 1, "\(phone.id)")
            }
        }
        let report = try JSONParser.parse(run.out)
        #expect(report["delivered"]?.int64Value == Int64(Self.phones().count))
    }

    @Test func fanoutTakesATopicThatIsTheEventsAppAndRefusesAnotherWith64NamingBoth() throws {
        let scenario = try FanoutScenario()
        try scenario.register(Self.phones())
        let path = scenario.event("start.json", Self.mixedStart)
        let other = scenario.fanout(path, ["--topic", "com.example.other"])
        #expect(other.code == .usage, "\(other)")
        #expect(other.err.contains("com.example.other") && other.err.contains(testBundle), "\(other)")
        #expect(scenario.running.counters.accepted == 0)
        let same = scenario.fanout(path, ["--topic", testBundle])
        #expect(same.code == .success, "\(same)")
        #expect(scenario.running.counters.accepted == Self.phones().count)
    }

    @Test func fanoutDoesNotReadSokuhoTopicSoAVariableForAnotherAppChangesNothing() throws {
        let scenario = try FanoutScenario()
        try scenario.register(Self.phones())
        let run = sokuho(["fanout", scenario.event("start.json", Self.mixedStart), "--json"] + scenario.connection,
                         environment: ["SOKUHO_TOPIC": "com.example.other"])
        #expect(run.code == .success, "\(run)")
        #expect(scenario.running.counters.accepted == Self.phones().count)
    }

    @Test func sendRefusesInputPushTokenWithInputPushChannelWith64NamingBoth() {
        let dir = temporaryDirectory()
        let attributes = writeFile(dir, "attributes.json", #"{"id":"x"}"#)
        let state = writeFile(dir, "state.json", #"{"intensity":3}"#)
        let run = sokuho(["send", "--token", deviceToken("a4"), "--event", "start", "--attributes-type", "EewAttributes",
                          "--attributes", attributes, "--content-state", state, "--alert-title", "Quake", "--alert-body", "Shaking",
                          "--input-push-token", "--input-push-channel", "AAAAAAAAAAAAAAAAAAAAAAAA", "--topic", testBundle])
        #expect(run.code == .usage, "\(run)")
        #expect(run.err.contains("--input-push-token") && run.err.contains("--input-push-channel"), "\(run)")
    }
}

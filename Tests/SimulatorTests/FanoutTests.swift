import APNs
import JSONCore
import Simulator
import SokuhoCLI
import Testing
import TokenStore

/// `sokuho fanout` end to end against the simulator: who gets which push, exactly once.
/// The simulator here answers as APNs documents; where Apple's behaviour is unconfirmed (whether
/// iOS 17 refuses `input-push-token`), the tests assume the stricter reading: iOS 17 starts carry
/// neither `input-push-channel` nor `input-push-token`.
@Suite struct FanoutTests {
    /// 40 phones over two regions: levels 0…4, every other one on iOS 18; phone 0 follows both.
    static func phones() -> [FanoutScenario.Phone] {
        (0..<40).map { n in
            var topics = [("region:\(n % 2)", UInt8(n % 5))]
            if n == 0 { topics.append(("region:1", 0)) }
            return FanoutScenario.Phone(id: "install-\(n)", token: FanoutScenario.token(n), topics: topics, broadcast: n % 4 < 2)
        }
    }

    @Test func aStartReachesEveryEligiblePhoneOnceWithItsGroupsContentAndNobodyBelowTheLevel() throws {
        let scenario = try FanoutScenario()
        try scenario.register(Self.phones())
        // region:1 at level 4 ranks before region:0 at level 2: phone 0 (in both) gets region:1's content.
        let path = scenario.event("start.json", startEvent(groups: [("region:0", 2, "zero"), ("region:1", 4, "one")]))
        let run = scenario.fanout(path)
        #expect(run.code == .success, "\(run)")
        let pushes = scenario.devicePushes()
        for phone in Self.phones() {
            let own = phone.topics.filter { $0.0 == "region:1" ? $0.1 <= 4 : $0.1 <= 2 }
            let received = pushes[phone.token] ?? []
            #expect(received.count == (own.isEmpty ? 0 : 1), "\(phone.id) got \(received.count) starts")
            guard let push = received.first else { continue }
            let aps = push.body["aps"]
            let expected = phone.topics.contains { $0.0 == "region:1" && $0.1 <= 4 } ? "one" : "zero"
            #expect(aps?["content-state"]?["text"]?.stringValue == expected, "\(phone.id)")
            #expect(aps?["event"]?.stringValue == "start")
            // iOS 17 phones refuse a start with input-push-channel: only iOS 18 ones get it.
            #expect((aps?["input-push-channel"] != nil) == phone.broadcast, "\(phone.id)")
            // Every group has a channel: its starts subscribe to it and ask for no update token,
            // though the event asks (one push type per activity; StartPushTypeTests has both kinds).
            #expect(aps?["input-push-token"] == nil, "\(phone.id)")
        }
        let report = try JSONParser.parse(run.out)
        let eligible = Self.phones().filter { p in p.topics.contains { $0.0 == "region:1" ? $0.1 <= 4 : $0.1 <= 2 } }.count
        #expect(report["delivered"]?.int64Value == Int64(eligible))
        #expect(report["duplicatesAvoided"]?.int64Value == 1)  // phone 0 qualifies in both groups
        #expect(scenario.running.counters.accepted == eligible)
    }

    @Test func theSameEventTwiceIsAlreadySentAndAnotherBodyUnderTheSameSerialIsRefused() throws {
        let scenario = try FanoutScenario()
        try scenario.register(Self.phones())
        let path = scenario.event("start.json", startEvent(groups: [("region:0", 4, "zero")]))
        #expect(scenario.fanout(path).code == .success)
        let accepted = scenario.running.counters.accepted
        let again = scenario.fanout(path)
        #expect(again.code == .success)
        #expect(again.err.contains("already sent"))
        #expect(try JSONParser.parse(again.out)["delivered"]?.int64Value == Int64(accepted))
        #expect(scenario.running.counters.accepted == accepted)
        let changed = scenario.event("changed.json", startEvent(groups: [("region:0", 4, "other text")]))
        let refused = scenario.fanout(changed)
        #expect(refused.code == .dataError, "\(refused)")
        #expect(refused.err.contains("different body"))
        #expect(scenario.running.counters.accepted == accepted)
    }

    @Test func aWidenedAreaGetsStartsAndEveryChannelAndUpdateTokenGetsTheUpdateOnce() throws {
        let scenario = try FanoutScenario()
        try scenario.register(Self.phones())
        #expect(scenario.fanout(scenario.event("1.json", startEvent(groups: [("region:0", 4, "a")]))).code == .success)
        let started = scenario.devicePushes().count
        // An iOS 17 phone reports its activity's update token.
        _ = try scenario.withStore { store in
            try store.write([.putActivity(ActivityRecord(id: "act-1", app: testBundle, environment: .production,
                                                         updateToken: Array(hex: FanoutScenario.token(7, prefix: "b1")), eventKey: "eew-test",
                                                         startedAt: 1_000))])
        }
        let update = scenario.event("2.json", followEvent(serial: 2, kind: "update", groups: [("region:0", 4, "b"), ("region:1", 4, "b")]))
        let run = scenario.fanout(update)
        #expect(run.code == .success, "\(run)")
        let pushes = scenario.devicePushes()
        // region:1's phones (odd numbers) got their starts; region:0's got none again.
        for phone in Self.phones() {
            let starts = (pushes[phone.token] ?? []).filter { $0.body["aps"]?["event"]?.stringValue == "start" }.count
            #expect(starts == 1, "\(phone.id) got \(starts) starts")
        }
        #expect(pushes.count == started + 20 + 1)  // region:1's 20 new phones and the activity token
        // One broadcast per channel (region:0's, created by the start; region:1's, created now for
        // its starts), one update per activity token.
        #expect(scenario.broadcasts().values.sorted() == [1, 1])
        #expect(pushes[FanoutScenario.token(7, prefix: "b1")]?.count == 1)
        let end = scenario.event("3.json", followEvent(serial: 3, kind: "end", groups: [("region:0", 4, "c"), ("region:1", 4, "c")]))
        #expect(scenario.fanout(end).code == .success)
        #expect(scenario.broadcasts().values.sorted() == [2, 2])
        #expect(scenario.devicePushes()[FanoutScenario.token(7, prefix: "b1")]?.count == 2)
        // The end deleted the event's auto channels.
        let channels = try scenario.withStore { try $0.channels(app: testBundle, environment: .production) }
        #expect(channels.isEmpty)
    }

    @Test func anActivityRegisteredWithItsTopicGetsThatGroupsContentAndOneWithoutGetsTheFirstGroups() throws {
        let scenario = try FanoutScenario()
        let withTopic = FanoutScenario.token(1, prefix: "b1"), without = FanoutScenario.token(2, prefix: "b1")
        _ = try scenario.withStore { store in
            try store.write([
                .putActivity(ActivityRecord(id: "a1", app: testBundle, environment: .production, updateToken: Array(hex: withTopic),
                                            eventKey: "eew-test", startedAt: 1_000, topic: "region:9")),
                .putActivity(ActivityRecord(id: "a2", app: testBundle, environment: .production, updateToken: Array(hex: without),
                                            eventKey: "eew-test", startedAt: 1_000)),
            ])
        }
        let update = followEvent(serial: 2, kind: "update", groups: [("region:1", 5, "first"), ("region:9", 3, "nine")], channel: "null")
        let run = scenario.fanout(scenario.event("update.json", update))
        #expect(run.code == .success, "\(run)")
        let pushes = scenario.devicePushes()
        #expect(pushes[withTopic]?.first?.body["aps"]?["content-state"]?["text"]?.stringValue == "nine")
        #expect(pushes[without]?.first?.body["aps"]?["content-state"]?["text"]?.stringValue == "first")
        #expect(pushes[withTopic]?.first?.body["aps"]?["event"]?.stringValue == "update")
    }

    @Test func theCircuitBreakerStopsAWrongEnvironmentEventAndPrunesNothing() throws {
        // Every answer BadDeviceToken: what sandbox tokens sent to production get.
        let scenario = try FanoutScenario { $0.faults = [(reason: "BadDeviceToken", fraction: 1.0)] }
        let phones = (0..<300).map { FanoutScenario.Phone(id: "p\($0)", token: FanoutScenario.token($0), topics: [("region:0", 0)]) }
        try scenario.register(phones)
        let run = scenario.fanout(scenario.event("start.json", startEvent(groups: [("region:0", 3, "x")])), ["--connections", "1", "--streams", "10"])
        #expect(run.code == .config, "\(run)")
        #expect(run.err.contains("circuit breaker"))
        let stats = try scenario.withStore { store in
            try phones.filter { try store.installation(id: $0.id)?.pushToStartToken != nil }.count
        }
        #expect(stats == phones.count)
    }

    @Test func a410PrunesTheTokenOnlyIfItWasRegisteredBeforeAPNsTimestamp() throws {
        let dead = FanoutScenario.token(1)
        let scenario = try FanoutScenario { $0.unregisteredTokens = [dead] }
        try scenario.register([FanoutScenario.Phone(id: "dead", token: dead, topics: [("region:0", 0)]),
                               FanoutScenario.Phone(id: "alive", token: FanoutScenario.token(2), topics: [("region:0", 0)])])
        let run = scenario.fanout(scenario.event("start.json", startEvent(groups: [("region:0", 3, "x")])))
        #expect(run.code == .success, "\(run)")
        let report = try JSONParser.parse(run.out)
        #expect(report["pruned"]?["Unregistered"]?.int64Value == 1)
        #expect(report["tokensRemoved"]?.int64Value == 1)
        let (deadToken, aliveToken) = try scenario.withStore { store in
            (try store.installation(id: "dead")?.pushToStartToken, try store.installation(id: "alive")?.pushToStartToken)
        }
        #expect(deadToken == nil)
        #expect(aliveToken != nil)
    }

    @Test func theStartBudgetSkipsAndCountsPhonesWithTooManyRecentStarts() throws {
        let scenario = try FanoutScenario()
        try scenario.register([FanoutScenario.Phone(id: "p", token: FanoutScenario.token(1), topics: [("region:0", 0)])])
        for index in 1...3 {
            let run = scenario.fanout(scenario.event("\(index).json", startEvent(key: "quake-\(index)", groups: [("region:0", 3, "x")])),
                                      ["--start-limit", "2"])
            #expect(run.code == .success, "\(run)")
            let report = try JSONParser.parse(run.out)
            #expect(report["delivered"]?.int64Value == (index <= 2 ? 1 : 0))
            #expect(report["skippedByBudget"]?.int64Value == (index <= 2 ? 0 : 1))
        }
        #expect(scenario.running.counters.accepted == 2)
    }

    @Test func phonesWithoutLiveActivitiesGetTheFallbackAlert() throws {
        let scenario = try FanoutScenario()
        try scenario.register([FanoutScenario.Phone(id: "p", token: FanoutScenario.token(1), topics: [("region:0", 0)]),
                               FanoutScenario.Phone(id: "old", token: FanoutScenario.token(2), kind: .device, topics: [("region:0", 0)])])
        let extra = #","fallbackAlert":{"title":"Earthquake","body":"Take cover"}"#
        let run = scenario.fanout(scenario.event("start.json", startEvent(groups: [("region:0", 3, "x")], extra: extra)))
        #expect(run.code == .success, "\(run)")
        let alert = scenario.devicePushes()[FanoutScenario.token(2)]?.first
        #expect(alert?.headers["apns-push-type"]?.stringValue == "alert")
        #expect(alert?.body["aps"]?["alert"]?["body"]?.stringValue == "Take cover")
        #expect(try JSONParser.parse(run.out)["fallbackAlerts"]?.int64Value == 1)
    }

    @Test func theAuditLogHasOneLinePerPushWithOnlyTheTokensLastEightCharacters() throws {
        let scenario = try FanoutScenario()
        try scenario.register(Self.phones())
        let log = scenario.directory + "/audit.jsonl"
        let run = scenario.fanout(scenario.event("start.json", startEvent(groups: [("region:0", 4, "x")])), ["--log", log])
        #expect(run.code == .success, "\(run)")
        let lines = try String(decoding: readFile(log), as: UTF8.self).split(separator: "\n").map { try JSONParser.parse(String($0)) }
        #expect(lines.count == scenario.running.counters.accepted)
        let suffixes = Set(Self.phones().map { String($0.token.suffix(8)) })
        for line in lines {
            let token = line["token"]?.stringValue ?? ""
            #expect(token.count == 8 && suffixes.contains(token), "\(line.jsonText)")
            #expect(line["group"]?.stringValue == "region:0")
            #expect(line["status"]?.int64Value == 200)
            #expect(line["outcome"]?.stringValue == "delivered")
            #expect(line["apnsId"]?.stringValue?.count == 36)
        }
        // No full token anywhere in the log.
        let text = String(decoding: readFile(log), as: UTF8.self)
        #expect(!Self.phones().contains { text.contains($0.token) })
    }

    @Test func anInvalidEventIsRefusedNamingTheFieldBeforeAnythingIsSent() throws {
        let scenario = try FanoutScenario()
        let cases = [
            (#"{"app":"com.example.eew","key":"k","kind":"start","groups":[]}"#, "environment"),
            (startEvent(groups: [("region:0", 300, "x")]), "groups[0].level"),
            (startEvent(groups: [("region:0", 3, "x")]).replacing("deadlineSeconds", with: "deadlineSecond"), "deadlineSecond"),
            (#"{"app":"com.example.eew","environment":"production","key":"k","kind":"start","groups":[{"topic":"a","level":1,"contentState":{}}]}"#, "attributesType"),
        ]
        for (json, field) in cases {
            let run = scenario.fanout(scenario.event("bad.json", json))
            #expect(run.code == .dataError, "\(run)")
            #expect(run.err.contains(field), "\(run)")
        }
        #expect(scenario.running.counters.accepted == 0)
    }
}

/// `sokuho demo` is the README's first command: it must run end to end and agree with the simulator.
@Suite struct DemoCommandTests {
    @Test func theDemoRunsAllFourStepsAndEveryReportMatchesWhatTheSimulatorAccepted() throws {
        let directory = temporaryDirectory("sokuho-demo-test")
        let svg = directory + "/demo.svg"
        let run = sokuho(["demo", "--installations", "3000", "--regions", "20", "--svg", svg, "--json"])
        #expect(run.code == .success, "\(run)")
        let reports = try run.out.split(separator: "\n").map { try JSONParser.parse(String($0)) }
        #expect(reports.map { $0["kind"]?.stringValue } == ["start", "update", "update", "end"])
        for report in reports {
            #expect(report["targets"]?.int64Value == report["delivered"]?.int64Value, "\(report.jsonText)")
            #expect((report["delivered"]?.int64Value ?? 0) > 0)
        }
        // The widening serial started phones in the new regions: more device pushes than broadcasts.
        #expect((reports[1]["broadcasts"]?.int64Value ?? 0) > 0)
        #expect(String(decoding: readFile(svg), as: UTF8.self).hasPrefix("<?xml") || String(decoding: readFile(svg), as: UTF8.self).hasPrefix("<svg"))
    }
}

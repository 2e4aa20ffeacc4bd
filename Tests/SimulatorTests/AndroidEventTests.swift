#if canImport(Glibc)
import Glibc
#endif
import IO
import JSONCore
import Simulator
import SokuhoCLI
import Testing
import TokenStore
import Vocabulary

/// Issue 23: one event reaches iOS and Android phones — APNs starts for iOS 17 and 18, an FCM data
/// message (an Android 16 Live Update) for Android — with the same topic and level rules, one per
/// installation, the highest group winning; updates and ends reach every Android phone the
/// start's rule selects. Against the simulator's FCM side (same port, by path).
@Suite struct AndroidEventTests {
    static let regionOne = [("region:1", 5, "one")]
    static let groups = [("region:1", 5, "one"), ("region:2", 3, "two")]

    /// iOS 17 and 18 in region:1; Android: a0 in region:1, a1 in both (region:1 wins: its group
    /// is higher), a2 in region:2 only, a3 in region:1 above the event's level (not reached).
    static func phones() -> [FanoutScenario.Phone] {
        [
            FanoutScenario.Phone(id: "ios17", token: FanoutScenario.token(1), topics: [("region:1", 0)], broadcast: false),
            FanoutScenario.Phone(id: "ios18", token: FanoutScenario.token(2), topics: [("region:1", 0)], broadcast: true),
            FanoutScenario.Phone(id: "a0", token: FanoutScenario.fcmToken(0), kind: .fcm, topics: [("region:1", 0)]),
            FanoutScenario.Phone(id: "a1", token: FanoutScenario.fcmToken(1), kind: .fcm, topics: [("region:1", 4), ("region:2", 0)]),
            FanoutScenario.Phone(id: "a2", token: FanoutScenario.fcmToken(2), kind: .fcm, topics: [("region:2", 0)]),
            FanoutScenario.Phone(id: "a3", token: FanoutScenario.fcmToken(3), kind: .fcm, topics: [("region:1", 6)]),
        ]
    }

    /// A scenario of `phones()` and the CLI's fan-out of one start to them, with the simulator's
    /// FCM side unless `android` is false.
    static func started(key: String, groups: [(String, Int, String)], extra: String = "", android: Bool = true) throws -> (FanoutScenario, CLIRun) {
        let scenario = try FanoutScenario()
        try scenario.register(phones())
        let run = scenario.fanout(scenario.event("start.json", startEvent(key: key, groups: groups, channel: "null", extra: extra)), android ? scenario.android : [])
        return (scenario, run)
    }

    /// The group each reached Android phone's messages name.
    static let androidGroups = [FanoutScenario.fcmToken(0): "region:1", FanoutScenario.fcmToken(1): "region:1", FanoutScenario.fcmToken(2): "region:2"]

    @Test func aMixedStoreGetsOneStartPerInstallationOnItsOwnProviderWithItsGroupsContent() throws {
        let (scenario, run) = try Self.started(key: "eew-mixed", groups: Self.groups)
        #expect(run.code == .success, "\(run)")
        let pushes = scenario.devicePushes()
        #expect(pushes.count == 2 && pushes.values.allSatisfy { $0.count == 1 }, "one APNs start per iOS phone: \(pushes.mapValues(\.count))")
        let messages = scenario.fcmMessages()
        #expect(Set(messages.keys) == Set(Self.androidGroups.keys), "a3 subscribed above the event's level")
        for (token, group) in Self.androidGroups {
            let received = messages[token] ?? []
            try #require(received.count == 1, "\(token.prefix(3)) got \(received.count) messages")
            let data = received[0]["data"]
            #expect(data?["kind"]?.stringValue == "start" && data?["eventKey"]?.stringValue == "eew-mixed" && data?["serial"]?.stringValue == "1")
            #expect(data?["group"]?.stringValue == group)
            let state = try JSONParser.parse(data?["contentState"]?.stringValue ?? "")
            #expect(state["region"]?.stringValue == group, "the content of the group the phone was reached through")
            #expect(data?["alertTitle"]?.stringValue == "Earthquake")
            #expect(received[0]["android"]?["priority"]?.stringValue == "HIGH" && received[0]["android"]?["collapse_key"]?.stringValue == "eew-mixed")
            #expect(received[0]["notification"] == nil, "no fallbackAlert: a data message the app draws")
        }
        let report = try JSONParser.parse(run.out)
        #expect(report["delivered"]?.int64Value == 5 && report["targets"]?.int64Value == 5, "\(run.out)")
        #expect(report["android"]?["targets"]?.int64Value == 3 && report["android"]?["delivered"]?.int64Value == 3, "\(run.out)")
        #expect(report["android"]?["skipped"]?.int64Value == 0)
    }

    @Test func updatesAndEndsReachEveryAndroidPhoneTheStartsRuleSelectsOnceEach() throws {
        let scenario = try FanoutScenario()
        try scenario.register(Self.phones())
        let start = scenario.fanout(scenario.event("start.json", startEvent(key: "eew-follow", groups: Self.groups, channel: "null")), scenario.android)
        #expect(start.code == .success, "\(start)")
        let update = scenario.fanout(scenario.event("update.json", followEvent(key: "eew-follow", serial: 2, kind: "update", groups: Self.groups, channel: "null")),
                                     scenario.android)
        #expect(update.code == .success, "\(update)")
        let end = scenario.fanout(scenario.event("end.json", followEvent(key: "eew-follow", serial: 3, kind: "end", groups: Self.groups, channel: "null")),
                                  scenario.android)
        #expect(end.code == .success, "\(end)")
        let messages = scenario.fcmMessages()
        #expect(Set(messages.keys) == Set(Self.androidGroups.keys))
        for (token, group) in Self.androidGroups {
            let kinds = (messages[token] ?? []).map { ($0["data"]?["kind"]?.stringValue ?? "?") + "/" + ($0["data"]?["serial"]?.stringValue ?? "?") }
            #expect(kinds == ["start/1", "update/2", "end/3"], "\(token.prefix(3)): \(kinds)")
            #expect((messages[token] ?? []).allSatisfy { $0["data"]?["group"]?.stringValue == group })
        }
        for run in [update, end] {
            let report = try JSONParser.parse(run.out)
            #expect(report["android"]?["delivered"]?.int64Value == 3, "\(run.out)")
        }
    }

    /// A group APNs carries and FCM cannot: region:1's 2.6 KB content state is an APNs start of
    /// about 2.9 KB, but its Android start also carries the event's 1.5 KB fallback alert (the
    /// notification for phones whose app is not running), 4.3 KB of payload; region:2's fits both.
    /// Sent with `longFallbackAlert`.
    static let fitsAPNsNotFCM = [("region:1", 5, String(repeating: "a", count: 2_600)), ("region:2", 3, "two")]
    static let longFallbackAlert = #","fallbackAlert":{"title":"Earthquake","body":"\#(String(repeating: "b", count: 1_500))"}"#

    /// A content state whose JSON is mostly quotes: 2.7 KB as FCM counts it (unescaped), 4.4 KB as
    /// a JSON body with every quote escaped — the reading Sokuho used before, which refused it.
    static let quotedContent = [("region:1", 5, "one\",\"pad\":[" + Array(repeating: "\"a\"", count: 650).joined(separator: ",") + "],\"end\":\"x")]

    /// Issue 32: the size as FCM counts it — data keys and values and notification texts,
    /// unescaped — so content APNs carries is not refused for Android over its JSON escaping.
    @Test func contentFCMCountsUnderItsLimitReachesTheAndroidPhonesThoughItsBodyIsLonger() throws {
        let (scenario, run) = try Self.started(key: "eew-quoted", groups: Self.quotedContent)
        #expect(run.code == .success, "\(run)")
        let messages = scenario.fcmMessages()
        #expect(Set(messages.keys) == [FanoutScenario.fcmToken(0), FanoutScenario.fcmToken(1)], "\(messages.keys)")
        #expect(messages.values.allSatisfy { $0.count == 1 && ($0[0]["data"]?["contentState"]?.stringValue?.utf8.count ?? 0) > 2_600 })
        let report = try JSONParser.parse(run.out)
        #expect(report["warnings"]?.arrayValue?.isEmpty == true && report["lanes"]?["fcm"]?["delivered"]?.int64Value == 2, "\(run.out)")
    }

    /// Issue 32: an event whose group fits APNs but not FCM reaches every iOS phone; that group's
    /// Android phones are counted, not sent to, and the report and exit status say why — while a
    /// phone another group can carry (a1, in region:2 too) gets that group's message.
    @Test func aGroupFCMCannotCarryCostsOnlyItsAndroidPhones() throws {
        let (scenario, run) = try Self.started(key: "eew-big", groups: Self.fitsAPNsNotFCM, extra: Self.longFallbackAlert)
        #expect(run.code == .refused, "exit 1: Android phones left out\n\(run)")
        #expect(run.err.contains("1 Android phones not sent to: groups[0] (region:1) for Android"), "\(run.err)")
        let pushes = scenario.devicePushes()
        #expect(pushes.count == 2 && pushes.values.allSatisfy { $0.count == 1 }, "every iOS phone started once: \(pushes.mapValues(\.count))")
        let messages = scenario.fcmMessages()
        #expect(Set(messages.keys) == [FanoutScenario.fcmToken(1), FanoutScenario.fcmToken(2)], "a0 is region:1's alone")
        #expect(messages.values.allSatisfy { $0.count == 1 && $0[0]["data"]?["group"]?.stringValue == "region:2" })
        let report = try JSONParser.parse(run.out.split(separator: "\n").first.map(String.init) ?? "")
        #expect(report["android"]?["skipped"]?.int64Value == 1 && report["android"]?["delivered"]?.int64Value == 2, "\(run.out)")
        #expect(report["delivered"]?.int64Value == 4 && report["stopped"]?.stringValue == nil, "\(run.out)")
        let warnings = report["warnings"]?.arrayValue?.compactMap(\.stringValue) ?? []
        #expect(warnings.count == 1 && warnings[0].hasPrefix("groups[0] (region:1) for Android: ") && warnings[0].contains("4096 less a 96-byte margin"), "\(warnings)")
    }

    /// A start whose attributes are more than ActivityKit takes (attributes and content state
    /// together at most 4 KB): APNs cannot carry it; FCM's message does not carry attributes.
    static func bigAttributesStart(key: String) -> String {
        #"{"app":"\#(testBundle)","environment":"production","key":"\#(key)","serial":1,"kind":"start","deadlineSeconds":30,"attributesType":"EewAttributes","attributes":{"id":"\#(key)","map":"\#(String(repeating: "m", count: 4_100))"},"alert":{"title":"Earthquake","body":"Strong shaking expected"},"groups":[{"topic":"region:1","level":5,"channel":null,"contentState":{"text":"one"}}]}"#
    }

    /// Issue 32, the reverse of the above: an event whose group fits FCM but not APNs reaches every
    /// Android phone; its iOS phones are counted in the APNs lane, not sent to, and the report and
    /// exit status say why. Without an Android side no lane can carry it: refused, nothing sent.
    @Test func aGroupAPNsCannotCarryCostsOnlyItsIOSPhones() throws {
        let scenario = try FanoutScenario()
        try scenario.register(Self.phones())
        let run = scenario.fanout(scenario.event("start.json", Self.bigAttributesStart(key: "eew-map")), scenario.android)
        #expect(run.code == .refused, "exit 1: iOS phones left out\n\(run)")
        #expect(run.err.contains("2 iOS phones not sent to: groups[0] (region:1): "), "\(run.err)")
        #expect(scenario.devicePushes().isEmpty, "\(scenario.devicePushes().mapValues(\.count))")
        let messages = scenario.fcmMessages()
        #expect(Set(messages.keys) == [FanoutScenario.fcmToken(0), FanoutScenario.fcmToken(1)] && messages.values.allSatisfy { $0.count == 1 },
                "\(messages.mapValues(\.count))")
        let report = try JSONParser.parse(run.out.split(separator: "\n").first.map(String.init) ?? "")
        #expect(report["lanes"]?["apns"]?["skipped"]?.int64Value == 2 && report["lanes"]?["fcm"]?["delivered"]?.int64Value == 2, "\(run.out)")
        let warnings = report["warnings"]?.arrayValue?.compactMap(\.stringValue) ?? []
        #expect(warnings.count == 1 && warnings[0].hasPrefix("groups[0] (region:1): ") && warnings[0].contains("ActivityKit takes at most 4096"), "\(warnings)")

        let alone = try FanoutScenario()
        try alone.register(Self.phones())
        let refused = alone.fanout(alone.event("start.json", Self.bigAttributesStart(key: "eew-map")))
        #expect(refused.code == .dataError && refused.err.contains("ActivityKit takes at most 4096"), "\(refused)")
        #expect(alone.devicePushes().isEmpty && alone.fcmMessages().isEmpty)
    }

    /// Issue 32: a lane's failure is the lane's. The service account's key is deleted mid-event
    /// (FCM refuses its tokens, Google's token endpoint answers invalid_grant): Android stops,
    /// saying why in its lane, every Android phone is accounted for once, and every iOS phone
    /// gets its start as if Android were not there.
    @Test func anAndroidLaneWhoseCredentialsAreRefusedMidEventLeavesEveryIOSPhoneDelivered() throws {
        let scenario = try FanoutScenario { $0.latency = .milliseconds(20) }
        let ios = (0..<3_000).map { FanoutScenario.token($0) }, android = (0..<2_000).map { FanoutScenario.fcmToken($0) }
        try scenario.register(ios.enumerated().map { FanoutScenario.Phone(id: "i\($0)", token: $1, topics: [("region:1", 0)]) }
            + android.enumerated().map { FanoutScenario.Phone(id: "a\($0)", token: $1, kind: .fcm, topics: [("region:1", 0)]) })
        let path = scenario.event("start.json", startEvent(key: "eew-revoked", groups: Self.regionOne, channel: "null"))
        // 1,000 Android messages a second: the Android side takes 2 s, the key goes at 300.
        let child = ChildProcess(SimulatorProcessTests.binary, ["fanout", path, "--json"] + scenario.connection + scenario.android
                                 + ["--fcm-connections", "1", "--fcm-messages-per-minute", "60000"])
        let giveUp = MonotonicInstant.now() + .seconds(60)
        while scenario.running.simulator.counters.fcmAccepted < 300, MonotonicInstant.now() < giveUp { usleep(5_000) }
        scenario.running.simulator.revokeFCMServiceAccount()
        let out = child.readRest()
        let status = child.wait()
        #expect(status == 1, "exit 1: Android phones were left out\n\(out)\n\(child.stderr)")
        let starts = scenario.devicePushes()
        #expect(ios.allSatisfy { starts[$0]?.count == 1 }, "\(ios.filter { starts[$0]?.count != 1 }.count) iOS phones without exactly one start")
        let messages = scenario.fcmMessages()
        #expect(messages.values.allSatisfy { $0.count == 1 } && messages.count >= 300 && messages.count < 2_000, "\(messages.count) Android phones reached")
        let report = try JSONParser.parse(Array(out.utf8))
        let apns = report["lanes"]?["apns"], fcm = report["lanes"]?["fcm"]
        func count(_ lane: JSONValue?, _ name: String) -> Int { Int(lane?[name]?.int64Value ?? -1) }
        #expect(count(apns, "delivered") == 3_000 && apns?["stopped"] == .null && report["stopped"] == .null, "\(out)")
        #expect(fcm?["stopped"]?.stringValue?.contains("invalid_grant") == true, "\(out)")
        // Every Android phone once: a message FCM took, one refused when the key went, or not sent.
        #expect(count(fcm, "delivered") == messages.count, "\(out)")
        #expect(count(fcm, "targets") + count(fcm, "skipped") == 2_000, "\(out)")
    }

    @Test func anAppWithoutAnAndroidSideSendsToIOSAndCountsTheAndroidPhonesItLeftOut() throws {
        let (scenario, run) = try Self.started(key: "eew-ios", groups: Self.groups, android: false)
        #expect(run.code == .success, "\(run)")
        #expect(scenario.fcmMessages().isEmpty && scenario.devicePushes().count == 2)
        let report = try JSONParser.parse(run.out)
        #expect(report["android"]?["skipped"]?.int64Value == 3 && report["android"]?["targets"]?.int64Value == 0, "\(run.out)")
    }

    @Test func unregisteredPrunesOnlyTokensRegisteredBeforeTheEventStarted() throws {
        let old = FanoutScenario.fcmToken(0), renewed = FanoutScenario.fcmToken(2)
        let scenario = try FanoutScenario { $0.fcmUnregisteredTokens = [old, renewed] }
        try scenario.register(Self.phones())
        // a2 registered its token again after the event's start (FCM's error carries no time):
        // the token is the phone's again and stays.
        let later = UInt64(WallClock.milliseconds()) + 3_600_000
        try scenario.register([FanoutScenario.Phone(id: "a2", token: renewed, kind: .fcm, topics: [("region:2", 0)])], registeredAt: later)
        let run = scenario.fanout(scenario.event("start.json", startEvent(key: "eew-prune", groups: Self.groups, channel: "null")), scenario.android)
        let report = try JSONParser.parse(run.out)
        #expect(report["pruned"]?["UNREGISTERED"]?.int64Value == 2 && report["android"]?["pruned"]?.int64Value == 2, "\(run.out)")
        #expect(report["tokensRemoved"]?.int64Value == 1, "\(run.out)")
        try scenario.withStore { (store) throws -> Void in
            #expect(try store.tokenOwner(app: testBundle, environment: .production, kind: .fcm, token: Array(old.utf8)) == nil)
            #expect(try store.tokenOwner(app: testBundle, environment: .production, kind: .fcm, token: Array(renewed.utf8)) != nil)
            #expect(try store.tokenOwner(app: testBundle, environment: .production, kind: .fcm, token: Array(FanoutScenario.fcmToken(1).utf8)) != nil)
        }
    }

    @Test func retriedFCMAnswersKeepTheInvariantsEveryAndroidPhoneOnceNothingLost() throws {
        // 20% UNAVAILABLE and 5% INTERNAL answered to valid sends (retried with back-off), and a
        // few QUOTA_EXCEEDED (the whole pool waits out Retry-After, 1 s): FCM's transient faults.
        let scenario = try FanoutScenario { configuration in
            configuration.trackTokens = true
            configuration.seed = 23
            configuration.fcmFaults = [("UNAVAILABLE", 0.2), ("INTERNAL", 0.05), ("QUOTA_EXCEEDED", 0.003)]
        }
        let phones = (0..<300).map { FanoutScenario.Phone(id: "a\($0)", token: FanoutScenario.fcmToken($0), kind: .fcm, topics: [("region:1", 0)]) }
        let ios = (0..<100).map { FanoutScenario.Phone(id: "i\($0)", token: FanoutScenario.token($0), topics: [("region:1", 0)], broadcast: true) }
        try scenario.register(phones + ios)
        let run = scenario.fanout(scenario.event("start.json", startEvent(key: "eew-faults", groups: Self.regionOne, channel: "null")),
                                  scenario.android)
        // A message FCM kept answering UNAVAILABLE past the retry policy's attempts ends failed
        // (exit 1): still exactly one outcome, counted, never lost and never sent twice.
        #expect(run.code == .success || run.code == .refused, "\(run)")
        let report = try JSONParser.parse(run.out)
        let android = try #require(report["android"])
        func count(_ key: String) -> Int { Int(android[key]?.int64Value ?? -1) }
        #expect(count("targets") == 300 && count("delivered") + count("failed") + count("unknown") + count("expired") == 300, "\(run.out)")
        #expect(count("delivered") >= 270 && count("unknown") == 0, "\(run.out)")
        #expect((report["retried"]?.int64Value ?? 0) > 0, "the faults must have been retried: \(run.out)")
        let counters = scenario.running.counters
        #expect(counters.fcmAcceptedPerToken.count == count("delivered") && counters.fcmAcceptedPerToken.values.allSatisfy { $0 == 1 },
                "every delivered Android phone exactly once, as the report says")
        #expect(counters.acceptedPerToken.count == 100 && counters.acceptedPerToken.values.allSatisfy { $0 == 1 })
    }
}


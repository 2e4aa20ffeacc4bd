import IO
import JSONCore
import RedisTestSupport
import Simulator
import Testing

/// Issue 23 through the daemon: an app with an `android` member registers Android phones over the
/// API and its events reach them through its warm FCM pool, counted by provider in the report and
/// in `/metrics`; the credential check covers the service account.
@Suite struct ServeAndroidTests {
    /// The app's Android side on the scenario's simulator (FCM on the push port, its CA).
    static func android(_ scenario: FanoutScenario, fcmPort: Int? = nil) -> String {
        #","android":{"package":"com.example.quake","serviceAccountFile":"\#(scenario.running.simulator.fcmServiceAccountFile)","fcmHost":"127.0.0.1:\#(fcmPort ?? scenario.running.port)","caFile":"\#(scenario.running.certificates.ca)","connections":1}"#
    }

    static func androidRegistration(_ id: String, token: String, topic: String = "region:0", minLevel: Int = 0) -> String {
        #"{"app":"\#(testBundle)","environment":"production","installationId":"\#(id)","platform":"android","fcmToken":"\#(token)","topics":[{"name":"\#(topic)","minLevel":\#(minLevel)}]}"#
    }

    @Test func anEventReachesTheAndroidPhonesRegisteredOverTheAPIThroughTheWarmFCMPool() throws {
        let scenario = try FanoutScenario()
        let daemon = try ServeTests.Daemon(scenario, appExtra: Self.android(scenario))
        defer { _ = daemon.stop() }
        for number in 0..<4 {
            let ios = daemon.curl("POST", "/v1/installations", body: ServeTests.registration("ios-\(number)", pushToStart: FanoutScenario.token(number)), admin: false)
            #expect(ios.status == 201, "\(ios.body)")
            let android = daemon.curl("POST", "/v1/installations", body: Self.androidRegistration("android-\(number)", token: FanoutScenario.fcmToken(number),
                                                                                                     minLevel: number), admin: false)
            #expect(android.status == 201, "\(android.body)")
        }
        // Level 2: Android phones 0, 1 and 2 qualify, 3 subscribed above it.
        let accepted = daemon.curl("POST", "/v1/events", body: startEvent(key: "eew-android", groups: [("region:0", 2, "quake")], channel: "null"))
        #expect(accepted.status == 202, "\(accepted.body)")
        let finished = try daemon.waitForEvent(try #require(try JSONParser.parse(accepted.body)["url"]?.stringValue))
        let report = try #require(finished["report"])
        #expect(report["delivered"]?.int64Value == 7 && report["android"]?["delivered"]?.int64Value == 3, "\(finished.jsonText)")
        #expect(Set(scenario.fcmMessages().keys) == Set((0..<3).map(FanoutScenario.fcmToken)))
        #expect(scenario.devicePushes().count == 4)
        #expect(daemon.metric(#"sokuho_android_messages_total{app="\#(testBundle)/production",kind="start",outcome="delivered"}"#) == 3)
        // Each lane's share: in the report, and the latency of each provider apart.
        #expect(report["lanes"]?["fcm"]?["delivered"]?.int64Value == 3 && report["lanes"]?["apns"]?["delivered"]?.int64Value == 4, "\(finished.jsonText)")
        #expect(daemon.metric(#"sokuho_push_latency_seconds_count{app="\#(testBundle)/production",provider="fcm"}"#) == 3)
        #expect(daemon.metric(#"sokuho_push_latency_seconds_count{app="\#(testBundle)/production",provider="apns"}"#) == 4)
        #expect(daemon.metric(#"sokuho_fcm_connections_up{app="\#(testBundle)/production"}"#) == 1)
        #expect((daemon.metric(#"sokuho_fcm_access_tokens_total{app="\#(testBundle)/production"}"#) ?? 0) >= 1)
        #expect(daemon.metric(#"sokuho_credential_check_ok{app="\#(testBundle)/production"}"#) == 1, "the token exchange passed")
        // The status page: the Android side's pool as a row of its own, each event's Android share.
        let page = daemon.curl("GET", "/", admin: false).body
        #expect(page.contains("<tr class=\"android\"><td>\(testBundle)/production · Android com.example.quake (project "), "\(page)")
        #expect(page.contains("<td class=\"n android\">3 / 3</td>"), "\(page)")
        #expect(!page.contains(FanoutScenario.fcmToken(0)), "no token on the page")

        // The update reaches the same three Android phones, once each.
        let update = daemon.curl("POST", "/v1/events", body: followEvent(key: "eew-android", serial: 2, kind: "update", groups: [("region:0", 2, "later")], channel: "null"))
        _ = try daemon.waitForEvent(try #require(try JSONParser.parse(update.body)["url"]?.stringValue))
        let messages = scenario.fcmMessages()
        #expect((0..<3).allSatisfy { messages[FanoutScenario.fcmToken($0)]?.map { $0["data"]?["kind"]?.stringValue ?? "" } == ["start", "update"] })
    }

    /// Issue 32: a lane's failure is the lane's. An FCM that cannot be reached shows as the FCM
    /// lane down on `/readyz` while the app stays ready (its APNs lane sends): a load balancer
    /// must not take the iOS sender out for an Android outage.
    @Test func anFCMLaneThatCannotConnectShowsDownWhileTheAppStaysReady() throws {
        let scenario = try FanoutScenario()
        let nowhere = try RedisTestSupport.freePort()
        let member = Self.android(scenario, fcmPort: nowhere)
        let daemon = try ServeTests.Daemon(scenario, appExtra: member)
        defer { _ = daemon.stop() }
        var ready = daemon.curl("GET", "/readyz", admin: false)
        let deadline = MonotonicInstant.now() + .seconds(60)
        while ready.status != 200, MonotonicInstant.now() < deadline { sleep(milliseconds: 50); ready = daemon.curl("GET", "/readyz", admin: false) }
        #expect(ready.status == 200, "\(ready.body)")
        let app = try #require(try JSONParser.parse(ready.body)["apps"]?.arrayValue?.first)
        let lanes = app["lanes"]?.arrayValue ?? []
        #expect(app["ready"]?.boolValue == true, "\(ready.body)")
        #expect(lanes.map { $0["provider"]?.stringValue ?? "" } == ["apns", "fcm"], "\(ready.body)")
        #expect(lanes.first?["ready"]?.boolValue == true && (lanes.first?["connectionsUp"]?.int64Value ?? 0) > 0, "\(ready.body)")
        #expect(lanes.last?["ready"]?.boolValue == false && lanes.last?["connectionsUp"]?.int64Value == 0, "\(ready.body)")
        #expect(try ClusterEventTests.specProblems(daemon, "GET", "/readyz").isEmpty)
    }

    /// Issue 32: an event that fits APNs but not FCM is accepted (202, the warning in the answer),
    /// every iOS phone gets it, and the event ends done with the same warning in its report —
    /// before, it ended failed before a single iOS push, even with no Android phone in the topic.
    @Test func anEventFCMCannotCarryStillReachesEveryIOSPhone() throws {
        let scenario = try FanoutScenario()
        let daemon = try ServeTests.Daemon(scenario, appExtra: Self.android(scenario))
        defer { _ = daemon.stop() }
        for number in 0..<3 {
            let ios = daemon.curl("POST", "/v1/installations", body: ServeTests.registration("ios-\(number)", pushToStart: FanoutScenario.token(number)), admin: false)
            #expect(ios.status == 201, "\(ios.body)")
        }
        let groups = AndroidEventTests.fitsAPNsNotFCM.map { ("region:0", $0.1, $0.2) }.prefix(1)
        let accepted = daemon.curl("POST", "/v1/events", body: startEvent(key: "eew-big", groups: Array(groups), channel: "null",
                                                                          extra: AndroidEventTests.longFallbackAlert))
        #expect(accepted.status == 202, "\(accepted.body)")
        let answer = try JSONParser.parse(accepted.body)
        #expect(answer["warnings"]?.arrayValue?.first?.stringValue?.hasPrefix("groups[0] (region:0) for Android: ") == true, "\(accepted.body)")
        let finished = try daemon.waitForEvent(try #require(answer["url"]?.stringValue))
        #expect(finished["state"]?.stringValue == "done", "\(finished.jsonText)")
        let report = try #require(finished["report"])
        #expect(report["delivered"]?.int64Value == 3 && report["warnings"]?.arrayValue?.count == 1, "\(finished.jsonText)")
        #expect(scenario.devicePushes().count == 3)
    }

    @Test func anAndroidRegistrationNamesItsBadFieldAndAnIOSBodyCannotCarryAnFCMToken() throws {
        let scenario = try FanoutScenario()
        let daemon = try ServeTests.Daemon(scenario, appExtra: Self.android(scenario))
        defer { _ = daemon.stop() }
        let bad = daemon.curl("POST", "/v1/installations", body: Self.androidRegistration("a-bad", token: "not a token!"), admin: false)
        #expect(bad.status == 400 && bad.body.contains("fcmToken"), "\(bad.body)")
        let mixed = #"{"app":"\#(testBundle)","environment":"production","installationId":"a-mixed","fcmToken":"\#(FanoutScenario.fcmToken(9))","topics":[]}"#
        let answer = daemon.curl("POST", "/v1/installations", body: mixed, admin: false)
        #expect(answer.status == 400 && answer.body.contains("fcmToken"), "\(answer.body)")
    }
}

extension ServeAndroidTests {
    /// Issue 32 through the API: an event only FCM can carry (its attributes are more than
    /// ActivityKit takes) is 202 with a warning naming the group, and reaches the Android phones;
    /// its iOS phones are counted in the APNs lane. An app without an Android side has no lane
    /// for it: 400 at the POST, before any 202.
    @Test func anEventOnlyFCMCanCarryIsAcceptedWithAWarningAndOneNoLaneCanCarryIsRefused() throws {
        let scenario = try FanoutScenario()
        let daemon = try ServeTests.Daemon(scenario, appExtra: Self.android(scenario))
        defer { _ = daemon.stop() }
        for body in [ServeTests.registration("ios-0", pushToStart: FanoutScenario.token(0), topic: "region:1"),
                     Self.androidRegistration("android-0", token: FanoutScenario.fcmToken(0), topic: "region:1")] {
            #expect(daemon.curl("POST", "/v1/installations", body: body, admin: false).status == 201)
        }
        let accepted = daemon.curl("POST", "/v1/events", body: AndroidEventTests.bigAttributesStart(key: "eew-map"))
        #expect(accepted.status == 202, "\(accepted.body)")
        let answer = try JSONParser.parse(accepted.body)
        let warnings = answer["warnings"]?.arrayValue?.compactMap(\.stringValue) ?? []
        #expect(warnings.count == 1 && warnings[0].hasPrefix("groups[0] (region:1): ") && warnings[0].contains("ActivityKit"), "\(accepted.body)")
        let finished = try daemon.waitForEvent(try #require(answer["url"]?.stringValue))
        let report = try #require(finished["report"])
        #expect(report["lanes"]?["fcm"]?["delivered"]?.int64Value == 1 && report["lanes"]?["apns"]?["skipped"]?.int64Value == 1, "\(finished.jsonText)")
        #expect(scenario.devicePushes().isEmpty && scenario.fcmMessages().count == 1)

        let iosOnly = try ServeTests.Daemon(FanoutScenario())
        defer { _ = iosOnly.stop() }
        let refused = iosOnly.curl("POST", "/v1/events", body: AndroidEventTests.bigAttributesStart(key: "eew-map"))
        #expect(refused.status == 400 && refused.body.contains("ActivityKit takes at most 4096"), "\(refused.body)")
    }
}

#if canImport(Glibc)
import Glibc
#endif
import IO
import JSONCore
import RedisTestSupport
import Simulator
import Testing

/// Issue 33: one start per phone per event key, not per serial. Earthquake warnings are revised
/// every few seconds while the first is still going out: a start serial 2 POSTed while serial 1
/// sends must not start a phone serial 1 started (two Live Activities on a lock screen).
@Suite struct SupersedingSerialTests {
    /// Serial 1 starts regions 0–4 slowly (5 streams, 40 ms answers); serial 2, POSTed once serial
    /// 1 is sending, starts regions 0–9. Every phone gets exactly one start; the widened regions
    /// get serial 2's content; serial 1 ends done, superseded by 2, and serial 2 done.
    @Test func aLaterStartSerialPostedWhileTheFirstSendsStartsNoPhoneTwice() throws {
        let scenario = try FanoutScenario { $0.latency = .milliseconds(40) }
        let perRegion = 40
        try scenario.register((0..<(10 * perRegion)).map { number in
            FanoutScenario.Phone(id: "phone-\(number)", token: FanoutScenario.token(number), topics: [("region:\(number / perRegion)", 0)])
        })
        let daemon = try ServeTests.Daemon(scenario, connections: 1, streams: 5)
        defer { _ = daemon.stop() }
        let first = daemon.curl("POST", "/v1/events", body: startEvent(key: "eew-revised", groups: (0..<5).map { ("region:\($0)", 1, "one") }, channel: "null"))
        #expect(first.status == 202, "\(first.body)")
        // Serial 1 is sending (a loaded machine is slower, never faster: it has ~180 phones to go).
        let started = MonotonicInstant.now()
        while scenario.devicePushes().values.reduce(0, { $0 + $1.count }) < 20 && MonotonicInstant.now() - started < .seconds(60) { usleep(20_000) }
        let second = daemon.curl("POST", "/v1/events", body: startEvent(key: "eew-revised", serial: 2, groups: (0..<10).map { ("region:\($0)", 1, "two") }, channel: "null"))
        #expect(second.status == 202, "\(second.body)")

        let one = try daemon.waitForEvent("/v1/events/eew-revised/1"), two = try daemon.waitForEvent("/v1/events/eew-revised/2")
        Self.expectOneStartEach(scenario, perRegion: perRegion, one: one, two: two)
    }

    /// Serial 1 (regions 0–4) ended done, superseded by serial 2 (regions 0–9), which ended done:
    /// every phone exactly one start, the widened regions with serial 2's content, and the two
    /// reports together count each phone once.
    static func expectOneStartEach(_ scenario: FanoutScenario, perRegion: Int, one: JSONValue, two: JSONValue) {
        #expect(one["state"]?.stringValue == "done" && one["report"]?["supersededBy"]?.int64Value == 2, "\(one.jsonText)")
        #expect(two["state"]?.stringValue == "done", "\(two.jsonText)")
        let pushes = scenario.devicePushes()
        #expect(pushes.filter { $0.value.count > 1 }.count == 0, "phones started twice")
        #expect(pushes.count == 10 * perRegion, "every phone started: \(pushes.count)")
        for number in (5 * perRegion)..<(10 * perRegion) {
            let text = pushes[FanoutScenario.token(number)]?.first?.body["aps"]?["content-state"]?["text"]?.stringValue
            #expect(text == "two", "phone \(number) of a widened region: \(text ?? "no start")")
        }
        let delivered = (one["report"]?["delivered"]?.int64Value ?? 0) + (two["report"]?["delivered"]?.int64Value ?? 0)
        #expect(delivered == Int64(10 * perRegion), "the two reports together: \(delivered)")
    }

    /// The same in a cluster, serial 2 POSTed to the other node — two shards, so the four shard
    /// threads take serial 2's shards while serial 1's are still sending: each shard of the key is sent by
    /// one serial at a time (serial 1's shards stop at their next checkpoint, serial 2's take each
    /// shard as serial 1 lets it go, from its checkpoint), so no phone gets two starts.
    @Test(arguments: RedisServerFixture.Server.allCases)
    func aLaterStartSerialPostedToAnotherNodeWhileTheFirstSendsStartsNoPhoneTwice(_ kind: RedisServerFixture.Server) throws {
        let perRegion = 80
        let phones = (0..<(10 * perRegion)).map { number in
            FanoutScenario.Phone(id: "phone-\(number)", token: FanoutScenario.token(number), topics: [("region:\(number / perRegion)", 0)])
        }
        let nodes = try ClusterEventTests.TwoNodes(kind, phones: 0, latency: .milliseconds(40), registered: phones,
                                                  connections: 1, streams: 5, shards: 2)
        let (scenario, a, b) = (nodes.scenario, nodes.a, nodes.b)
        defer { _ = a.stop(); _ = b.stop() }
        let first = a.curl("POST", "/v1/events", body: startEvent(key: "eew-revised", groups: (0..<5).map { ("region:\($0)", 1, "one") }, channel: "null"))
        #expect(first.status == 202 && first.body.contains(#""cluster":true"#), "\(first.body)")
        let started = MonotonicInstant.now()
        while scenario.devicePushes().values.reduce(0, { $0 + $1.count }) < 20 && MonotonicInstant.now() - started < .seconds(60) { usleep(20_000) }
        let second = b.curl("POST", "/v1/events", body: startEvent(key: "eew-revised", serial: 2, groups: (0..<10).map { ("region:\($0)", 1, "two") }, channel: "null"))
        #expect(second.status == 202, "\(second.body)")

        let one = try ClusterEventTests.waitForClusterEvent(b, "/v1/events/eew-revised/1", seconds: 120)
        let two = try ClusterEventTests.waitForClusterEvent(a, "/v1/events/eew-revised/2", seconds: 120)
        Self.expectOneStartEach(scenario, perRegion: perRegion, one: one, two: two)
    }
}

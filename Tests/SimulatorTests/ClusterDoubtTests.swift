#if canImport(Glibc)
import Glibc
#endif
import JSONCore
import RedisTestSupport
import Testing

/// "Once" when Redis misbehaves (issue 22): a node runs a **new** key alone while Redis is away, but
/// never a key it offered to the cluster before — the cluster may have it, and the phones would get
/// two starts. Each case on Debian's redis-server and on Valkey 8; one simulator counts every phone.
@Suite(.serialized) struct ClusterDoubtTests {
    typealias Daemon = ServeTests.Daemon

    @Test(arguments: RedisServerFixture.Server.allCases)
    func aRetriedSubmissionWhoseFirstAnswerWasLostEndsAsOneRun(_ kind: RedisServerFixture.Server) throws {
        let redis = try RedisServerFixture(kind)
        let proxy = try TCPProxy(to: redis.port)
        defer { proxy.close() }
        let scenario = try FanoutScenario()
        let phones = ClusterEventTests.phones(450)
        let storeB = scenario.directory + "/store-b"
        try scenario.register(phones)
        try scenario.register(phones, into: storeB)
        // Node a reaches Redis through the proxy, node b directly.
        let a = try Daemon(scenario, extra: ClusterEventTests.cluster(proxy.port, node: "a", claimSeconds: 2), name: "a")
        let b = try Daemon(scenario, extra: ClusterEventTests.cluster(redis.port, node: "b", claimSeconds: 2), store: storeB, name: "b")
        defer { _ = a.stop(); _ = b.stop() }
        let event = ClusterEventTests.start(key: "eew-lost-reply")
        // A first event through node a: its link to Redis is up when the answers stop coming.
        #expect(a.curl("POST", "/v1/events", body: ClusterEventTests.start(key: "eew-warm")).status == 202)
        _ = try ClusterEventTests.waitForClusterEvent(a, "/v1/events/eew-warm/1")

        // Redis takes the event; its answer never comes back.
        proxy.cutReplies()
        let first = a.exchange("POST", "/v1/events", body: event)
        #expect(first.status == 503 && first.body.contains("cluster_unavailable"), "\(first.status) \(first.body)")
        #expect(first.header("Retry-After") != nil, "a 503 says when to come back")
        // Done as the 503 says, while Redis refuses connections: refused again, not run alone
        // (which the node did before, while the other node sent what Redis had recorded).
        proxy.refuse()
        usleep(500_000)
        let again = a.exchange("POST", "/v1/events", body: event)
        #expect(again.status == 503 && again.body.contains("in doubt") && again.header("Retry-After") != nil, "\(again.status) \(again.body)")
        // Its state is not "not found" either: the node cannot know.
        #expect(a.curl("GET", "/v1/events/eew-lost-reply/1").status == 503)

        // Node b sends what Redis recorded (the shards a's workers may hold are taken over).
        let status = try ClusterEventTests.waitForClusterEvent(b, "/v1/events/eew-lost-reply/1", seconds: 90)
        #expect(status["state"]?.stringValue == "done", "\(status)")

        // Redis reachable again: the same submission is recognised, and nothing runs twice.
        proxy.heal()
        let afterwards = try Self.submitUntilAnswered(a, event)
        #expect(afterwards.status == 200 || afterwards.status == 202, "\(afterwards.status) \(afterwards.body)")
        _ = try ClusterEventTests.waitForClusterEvent(a, "/v1/events/eew-lost-reply/1", seconds: 30)
        usleep(500_000)
        // Two events: each phone two starts, no more.
        let pushes = ClusterEventTests.pushesPerPhone(scenario)
        #expect(pushes.count == 450, "\(450 - pushes.count) phones without a start")
        #expect(pushes.values.filter { $0 < 2 }.isEmpty, "\(pushes.values.filter { $0 < 2 }.count) phones missed a start")
        #expect(pushes.values.filter { $0 > 2 }.isEmpty, "\(pushes.values.filter { $0 > 2 }.count) phones with a second start of one event")
        #expect(a.metric(#"sokuho_cluster_events_alone_total{node="a"}"#) == 0)
    }

    @Test(arguments: RedisServerFixture.Server.allCases)
    func aFinishedClusterEventIsNeitherSentAgainNorUnknownWhileRedisIsAway(_ kind: RedisServerFixture.Server) throws {
        // With an append-only file, as the README asks: the restart keeps the ledger.
        let redis = try RedisServerFixture(kind, extraArguments: ["--appendonly", "yes", "--appendfsync", "always"])
        let scenario = try FanoutScenario()
        try scenario.register(ClusterEventTests.phones(228))
        let daemon = try Daemon(scenario, extra: ClusterEventTests.cluster(redis.port, node: "a"))
        defer { _ = daemon.stop() }
        let event = ClusterEventTests.start(key: "eew-finished")
        #expect(daemon.curl("POST", "/v1/events", body: event).status == 202)
        _ = try ClusterEventTests.waitForClusterEvent(daemon, "/v1/events/eew-finished/1")
        let ready = try JSONParser.parse(daemon.curl("GET", "/readyz").body)
        #expect(ready["cluster"]?["appendOnly"]?.boolValue == true && ready["cluster"]?["warning"] == .null, "\(ready)")
        #expect(daemon.metric(#"sokuho_cluster_redis_append_only{node="a"}"#) == 1)

        redis.stop()
        // Finished: every shard's record on this node says so, and nothing Redis holds changes
        // that — already sent, done, even while Redis is away (it was 503 "in doubt").
        for _ in 0..<2 {
            let resent = daemon.exchange("POST", "/v1/events", body: event)
            #expect(resent.status == 200 && resent.body.contains(#""alreadySent":true"#), "\(resent.status) \(resent.body)")
            let read = daemon.exchange("GET", "/v1/events/eew-finished/1")
            #expect(read.status == 200 && read.body.contains(#""state":"done""#), "\(read.status) \(read.body)")
        }
        // A serial this node offered and that never finished is in doubt: refused, not run alone.
        let unfinished = daemon.exchange("POST", "/v1/events", body: ClusterEventTests.start(key: "eew-finished", serial: 2))
        #expect(unfinished.status == 503 && unfinished.body.contains("in doubt") && unfinished.header("Retry-After") != nil, "\(unfinished.status) \(unfinished.body)")
        let unknownRead = daemon.exchange("GET", "/v1/events/eew-finished/2")
        #expect(unknownRead.status == 503 && unknownRead.body.contains("cluster_unavailable") && unknownRead.header("Retry-After") != nil, "\(unknownRead.status) \(unknownRead.body)")
        // A key this node never offered still runs alone: a warning must go out during an outage.
        #expect(daemon.curl("POST", "/v1/events", body: ClusterEventTests.start(key: "eew-new-during-outage")).status == 202)
        _ = try daemon.waitForEvent("/v1/events/eew-new-during-outage/1")

        try redis.start()
        // The node reconnects no sooner than its back-off (up to 5 s after the outage's last
        // attempt, by design): the reads below are about what it answers once Redis is back, so
        // wait until its own background commands reach Redis again. The API's link, backing off
        // on its own schedule, follows at once (ClusterLinkTests).
        #expect(ClusterServeTests.eventually { daemon.metric(#"sokuho_cluster_connected{node="a"}"#) == 1 }, "node a never reconnected")
        // The first read after the restart may meet the node's broken connection; it is asked again.
        let read = daemon.curl("GET", "/v1/events/eew-finished/1")
        #expect(read.status == 200 && read.body.contains(#""state":"done""#), "\(read.status) \(read.body)")
        let resent = daemon.curl("POST", "/v1/events", body: event)
        #expect(resent.status == 200 && resent.body.contains(#""alreadySent":true"#), "\(resent.status) \(resent.body)")
        let pushes = ClusterEventTests.pushesPerPhone(scenario)
        #expect(pushes.count == 228 && pushes.values.allSatisfy { $0 == 2 }, "each phone one start per event: \(Set(pushes.values))")
    }

    /// Issue 33 item 3: a finished event whose record an empty Redis lost (a restart without an
    /// append-only file) is done, with its report, on every node — its shards' records are
    /// replicated to each — never lost; posted again to either node it is already sent, and no
    /// phone gets a second start. (It was `lost`, with an error log and the lost counter at 1.)
    @Test(arguments: RedisServerFixture.Server.allCases)
    func aFinishedEventAnEmptyRedisForgotIsDoneOnEveryNodeAndNeverSentAgain(_ kind: RedisServerFixture.Server) throws {
        let nodes = try ClusterEventTests.TwoNodes(kind, phones: 450)
        let (redis, scenario, a, b) = (nodes.redis, nodes.scenario, nodes.a, nodes.b)
        defer { _ = a.stop(); _ = b.stop() }
        let event = ClusterEventTests.start(key: "eew-finished-forgotten")
        #expect(a.curl("POST", "/v1/events", body: event).status == 202)
        let done = try ClusterEventTests.waitForClusterEvent(a, "/v1/events/eew-finished-forgotten/1")
        #expect(done["report"]?["delivered"]?.int64Value == 450, "\(done)")
        // Each node has applied what the other published (the shards' records among it).
        func metric(_ daemon: Daemon, _ name: String) -> Int { daemon.metric(name) ?? -1 }
        #expect(ClusterServeTests.eventually(60) {
            metric(a, "sokuho_cluster_replication_published_total") == metric(b, "sokuho_cluster_replication_applied_total")
                && metric(b, "sokuho_cluster_replication_published_total") == metric(a, "sokuho_cluster_replication_applied_total")
                && metric(a, "sokuho_cluster_replication_outbox") == 0 && metric(b, "sokuho_cluster_replication_outbox") == 0
        }, "replication did not settle")
        try redis.restart()  // empty: the ledger is gone

        for daemon in [a, b] {
            var read = daemon.exchange("GET", "/v1/events/eew-finished-forgotten/1")
            #expect(ClusterServeTests.eventually(30) {
                read = daemon.exchange("GET", "/v1/events/eew-finished-forgotten/1")
                return read.status == 200
            }, "\(read.status) \(read.body)")
            let status = try JSONParser.parse(read.body)
            #expect(status["state"]?.stringValue == "done" && status["report"]?["delivered"]?.int64Value == 450, "\(read.body)")
            #expect(try ClusterEventTests.specProblems(daemon, "GET", "/v1/events/eew-finished-forgotten/1").isEmpty)
            let again = try Self.submitUntilAnswered(daemon, event)
            #expect(again.status == 200 && again.body.contains(#""alreadySent":true"#), "\(again.status) \(again.body)")
        }
        usleep(500_000)
        let pushes = ClusterEventTests.pushesPerPhone(scenario)
        #expect(pushes.count == 450 && pushes.values.allSatisfy { $0 == 1 }, "each phone one start: \(Set(pushes.values))")
        #expect(a.metric(#"sokuho_cluster_events_lost_total{node="a"}"#) == 0 && b.metric(#"sokuho_cluster_events_lost_total{node="b"}"#) == 0)
        #expect(!(a.child.stderr + b.child.stderr).contains("is lost"), "\(a.child.stderr)")
    }

    @Test(arguments: RedisServerFixture.Server.allCases)
    func aRedisWithoutPersistenceIsFlaggedAndAnEventItLosesIsSaidToBeLost(_ kind: RedisServerFixture.Server) throws {
        let nodes = try ClusterEventTests.TwoNodes(kind, phones: ClusterFailureTests.phoneCount, latency: .milliseconds(40))
        let (redis, scenario, a, b) = (nodes.redis, nodes.scenario, nodes.a, nodes.b)
        defer { _ = a.stop(); _ = b.stop() }
        let ready = try JSONParser.parse(a.curl("GET", "/readyz").body)
        #expect(ready["cluster"]?["appendOnly"]?.boolValue == false, "\(ready)")
        #expect(ready["cluster"]?["warning"]?.stringValue?.contains("appendonly yes") == true, "\(ready)")
        #expect(a.metric(#"sokuho_cluster_redis_append_only{node="a"}"#) == 0)
        #expect(a.child.stderr.contains("keeps no append-only file"), "\(a.child.stderr)")

        #expect(a.curl("POST", "/v1/events", body: ClusterEventTests.start(key: "eew-forgotten")).status == 202)
        try ClusterFailureTests.waitForRunningShard(a, "/v1/events/eew-forgotten/1", node: "b")
        try redis.restart()  // empty: the ledger, the queued shards and the leases are gone

        // The accepting node says so on the event's URL, in its log and in its metrics.
        let deadline = now() + 30
        var state = ""
        while now() < deadline, state != "lost" {
            state = (try? JSONParser.parse(a.curl("GET", "/v1/events/eew-forgotten/1").body))?["state"]?.stringValue ?? ""
            usleep(100_000)
        }
        #expect(state == "lost")
        #expect(try ClusterEventTests.specProblems(a, "GET", "/v1/events/eew-forgotten/1").isEmpty)
        let lost = (a.metric(#"sokuho_cluster_events_lost_total{node="a"}"#) ?? 0) + (b.metric(#"sokuho_cluster_events_lost_total{node="b"}"#) ?? 0)
        #expect(lost >= 1)
        #expect((a.child.stderr + b.child.stderr).contains("'eew-forgotten' serial 1 is lost"), "\(a.child.stderr)\n\(b.child.stderr)")
        // The same submission is not taken as new: it would start every phone that got it again.
        let resent = a.curl("POST", "/v1/events", body: ClusterEventTests.start(key: "eew-forgotten"))
        #expect(resent.status == 409 && resent.body.contains("event_lost"), "\(resent.status) \(resent.body)")
        // Nor on the other node, which never offered it but sent shards of it (their records are
        // on it): it answered 202 and started 792 phones a second time (issue 33).
        let other = b.curl("POST", "/v1/events", body: ClusterEventTests.start(key: "eew-forgotten"))
        #expect(other.status == 409 && other.body.contains("event_lost"), "\(other.status) \(other.body)")
        let (_, doubled, _) = ClusterFailureTests.coverage([scenario])
        #expect(doubled <= ClusterFailureTests.inFlightBound, "\(doubled) phones got two starts")
    }

    /// Redis restarted empty while a third of a slow event's phones have their start: the 409's
    /// advice, a higher serial, posted to the node that did not accept the lost one, starts the
    /// phones the lost run missed and no phone a second time: each node's store holds the shards'
    /// checkpoints (replicated), and until the lost run's shards have stopped and their last
    /// checkpoints arrived the higher serial is refused (503) and a node holding one of its shards
    /// waits (issue 33: 828 and 1,637 phones started twice; here, before, 257–867 in 6 of 23 runs).
    @Test(arguments: RedisServerFixture.Server.allCases)
    func aHigherSerialAfterAnEmptyRedisRestartStartsOnlyThePhonesTheLostRunMissed(_ kind: RedisServerFixture.Server) throws {
        let phones = 3_000
        let nodes = try ClusterEventTests.TwoNodes(kind, phones: phones, latency: .milliseconds(100), connections: 1, streams: 20)
        let (redis, scenario, a, b) = (nodes.redis, nodes.scenario, nodes.a, nodes.b)
        defer { _ = a.stop(); _ = b.stop() }
        #expect(a.curl("POST", "/v1/events", body: ClusterEventTests.start(key: "eew-lost")).status == 202)
        let started = now()
        while scenario.devicePushes().count < phones / 3 && now() - started < 60 { usleep(20_000) }
        try redis.restart()  // empty: the ledger, the queued shards, the leases and the checkpoints are gone
        let lost = try Self.submitUntilAnswered(a, ClusterEventTests.start(key: "eew-lost"))
        #expect(lost.status == 409 && lost.body.contains("event_lost"), "\(lost.status) \(lost.body)")
        let reached = ClusterEventTests.pushesPerPhone(scenario)

        let higher = try Self.submitUntilAnswered(b, ClusterEventTests.start(key: "eew-lost", serial: 2))
        #expect(higher.status == 202, "\(higher.body)")
        let two = try ClusterEventTests.waitForClusterEvent(a, "/v1/events/eew-lost/2", seconds: 120)
        #expect(two["state"]?.stringValue == "done", "\(two.jsonText)")
        let pushes = ClusterEventTests.pushesPerPhone(scenario)
        let twice = pushes.filter { $0.value > 1 }.count
        print("lost run reached \(reached.count); after serial 2: \(pushes.count) phones, \(twice) twice")
        // Which shard of which serial ran where, and when it stopped: what a failure needs read.
        if twice > 0 { print("node a's log:\n\(a.child.stderr)\nnode b's log:\n\(b.child.stderr)") }
        #expect(pushes.count == phones, "\(phones - pushes.count) phones got no start")
        #expect(twice == 0, "serial 2 started \(twice) phones the lost run had reached (it had reached \(reached.count))")
    }

    /// POSTs `body` until it is not 503 (the node's link to Redis backs off up to 5 s after an outage).
    static func submitUntilAnswered(_ daemon: Daemon, _ body: String) throws -> (status: Int, body: String) {
        let deadline = now() + 20
        var answer = daemon.curl("POST", "/v1/events", body: body)
        while answer.status == 503, now() < deadline {
            usleep(250_000)
            answer = daemon.curl("POST", "/v1/events", body: body)
        }
        return answer
    }
}

#if canImport(Glibc)
import Glibc
#endif
import Redis
import Crypto
import JSONCore
import RedisTestSupport
import Testing
import TokenStore

/// Registration replication end to end: real `sokuho serve` processes, each with its own store,
/// sharing one redis-server of the test's own. Serialized: each test runs two or three daemons.
@Suite(.serialized) struct ClusterServeTests {
    typealias Daemon = ServeTests.Daemon

    static let unlimited = #","rateLimit":{"perSecond":100000,"burst":100000}"#

    static func cluster(_ redis: RedisServerFixture, node: String, streamLength: Int? = nil) -> String {
        let length = streamLength.map { #","registrationStreamLength":\#($0)"# } ?? ""
        return #","cluster":{"redis":"127.0.0.1:\#(redis.port)","node":"\#(node)"\#(length)}"# + unlimited
    }

    /// `/readyz`'s `cluster` member.
    static func clusterReadiness(_ daemon: Daemon) -> JSONValue? {
        (try? JSONParser.parse(daemon.curl("GET", "/readyz", admin: false).body))?["cluster"]
    }

    /// The installations a daemon's store holds, from its token statistics route.
    static func installations(_ daemon: Daemon) -> Int64? {
        let answer = daemon.curl("GET", "/v1/tokens/stats")
        guard answer.status == 200 else { return nil }
        return (try? JSONParser.parse(answer.body))?["installations"]?.int64Value
    }

    /// Waits up to `seconds` for `condition`.
    static func eventually(_ seconds: Double = 20, _ condition: () -> Bool) -> Bool {
        let deadline = now() + seconds
        while now() < deadline {
            if condition() { return true }
            sleep(milliseconds: 50)
        }
        return condition()
    }


    static func register(_ daemon: Daemon, _ range: Range<Int>, in directory: String) -> [Substring] {
        daemon.postMany("/v1/installations", range.map { ServeTests.registration("phone-\($0)", pushToStart: FanoutScenario.token($0)) },
                        in: directory)
    }

    @Test func registrationsOnOneNodeReachTheOtherWithTheirSecretsAndARemovalComesBack() throws {
        let redis = try RedisServerFixture()
        defer { redis.stop() }
        let scenario = try FanoutScenario()
        let a = try Daemon(scenario, extra: Self.cluster(redis, node: "a"))
        defer { _ = a.stop() }
        let b = try Daemon(scenario, extra: Self.cluster(redis, node: "b"), store: scenario.directory + "/store-b")
        defer { _ = b.stop() }

        #expect(Self.register(a, 0..<200, in: scenario.directory).allSatisfy { $0 == "201" })
        let created = a.curl("POST", "/v1/installations", body: ServeTests.registration(nil, pushToStart: FanoutScenario.token(500)), admin: false)
        #expect(created.status == 201, "\(created.body)")
        let json = try JSONParser.parse(created.body)
        let id = try #require(json["installationId"]?.stringValue), secret = try #require(json["secret"]?.stringValue)

        #expect(Self.eventually { Self.installations(b) == 201 }, "node b has \(String(describing: Self.installations(b)))")
        // The secret's hash replicated: node b accepts the phone's secret, and only it.
        let moved = ServeTests.registration(nil, pushToStart: FanoutScenario.token(501), topic: "region:7")
        #expect(b.curl("PUT", "/v1/installations/\(id)", body: moved, admin: false,
                       headers: ["Authorization: Installation \(Base64URL.encode([UInt8](repeating: 7, count: 32)))"]).status == 403)
        let updated = b.curl("PUT", "/v1/installations/\(id)", body: moved, admin: false, headers: ["Authorization: Installation \(secret)"])
        #expect(updated.status == 200, "\(updated.body)")

        // A removal on node b reaches node a.
        #expect(b.curl("DELETE", "/v1/installations/\(id)", admin: false, headers: ["Authorization: Installation \(secret)"]).status == 204)
        #expect(Self.eventually { Self.installations(a) == 200 }, "node a has \(String(describing: Self.installations(a)))")
        #expect(a.curl("PUT", "/v1/installations/\(id)", body: moved, admin: false, headers: ["Authorization: Installation \(secret)"]).status == 404)

        #expect(a.metric("sokuho_cluster_connected") == 1)
        #expect((a.metric("sokuho_cluster_replication_published_total") ?? 0) > 0)
        #expect((b.metric("sokuho_cluster_replication_applied_total") ?? 0) > 0)
        #expect(Self.eventually { (a.metric("sokuho_cluster_replication_own_skipped_total") ?? 0) > 0 }, "a reads its own entries back and skips them")
        #expect((a.metric("sokuho_cluster_replication_applied_total") ?? 0) >= 2, "b's update and removal")
        #expect(Self.eventually { a.metric("sokuho_cluster_replication_outbox") == 0 && b.metric("sokuho_cluster_replication_outbox") == 0 })
        #expect(a.metric("sokuho_cluster_replication_behind") == 0 && b.metric("sokuho_cluster_replication_behind") == 0)
        #expect(a.metric("sokuho_cluster_replication_bad_entries_total") == 0)
        let readyz = b.exchange("GET", "/readyz", admin: false)
        let spec = try OpenAPISpec()
        let problems = spec.problems(try #require(spec.operation("GET", "/readyz")), status: readyz.status, headers: readyz.headers, body: readyz.body)
        #expect(problems.isEmpty, "\(problems)")
        let ready = try JSONParser.parse(readyz.body)
        #expect(ready["cluster"]?["node"]?.stringValue == "b" && ready["cluster"]?["connected"]?.boolValue == true, "\(ready.jsonText)")
        #expect(ready["cluster"]?["applied"]?.stringValue.flatMap(StreamID.init) != nil && ready["cluster"]?["behind"] == .null, "\(ready.jsonText)")
    }

    @Test func aStoppedNodeCatchesUpFromWhereItStoppedWhenRestarted() throws {
        let redis = try RedisServerFixture()
        defer { redis.stop() }
        let scenario = try FanoutScenario()
        let a = try Daemon(scenario, extra: Self.cluster(redis, node: "a"))
        defer { _ = a.stop() }
        let storeB = scenario.directory + "/store-b"
        var b = try Daemon(scenario, extra: Self.cluster(redis, node: "b"), store: storeB)
        #expect(Self.register(a, 0..<20, in: scenario.directory).allSatisfy { $0 == "201" })
        #expect(Self.eventually { Self.installations(b) == 20 })
        #expect(b.stop() == 0)

        #expect(Self.register(a, 20..<50, in: scenario.directory).allSatisfy { $0 == "201" })
        #expect(Self.eventually { a.metric("sokuho_cluster_replication_outbox") == 0 }, "a published them all")
        let redisClient = try redis.connect()
        let total = try redisClient.length(of: ClusterKeys.registrations)
        let stopped = try TokenStore(directory: storeB, options: TokenStore.Options(readOnly: true)).replicationStatus()
        let resumeAt = try #require(stopped.applied.flatMap(StreamID.init))
        let missed = try redisClient.range(of: ClusterKeys.registrations, from: "(\(resumeAt)").count
        #expect(missed > 0 && Int64(missed) < total, "b stopped part-way: \(missed) of \(total) entries are new to it")

        b = try Daemon(scenario, extra: Self.cluster(redis, node: "b"), store: storeB)
        defer { _ = b.stop() }
        #expect(Self.eventually { Self.installations(b) == 50 })
        // Exactly the entries after its applied id, none from before it.
        #expect(b.metric("sokuho_cluster_replication_applied_total") == missed)
    }

    @Test func aNodeStartsWithoutRedisAndPublishesWhatItTookOnceRedisIsUp() throws {
        let redis = try RedisServerFixture()
        redis.stop()
        defer { redis.stop() }
        let scenario = try FanoutScenario()
        let a = try Daemon(scenario, extra: Self.cluster(redis, node: "a"))
        defer { _ = a.stop() }
        // Registrations are the local store's business: they answer 201 with Redis down.
        #expect(Self.register(a, 0..<30, in: scenario.directory).allSatisfy { $0 == "201" })
        #expect(a.metric("sokuho_cluster_connected") == 0)
        #expect((a.metric("sokuho_cluster_replication_outbox") ?? 0) > 0)
        let downz = a.exchange("GET", "/readyz", admin: false)
        let spec = try OpenAPISpec()
        let problems = spec.problems(try #require(spec.operation("GET", "/readyz")), status: downz.status, headers: downz.headers, body: downz.body)
        #expect(problems.isEmpty, "\(problems)")
        let down = try JSONParser.parse(downz.body)
        #expect(down["cluster"]?["connected"]?.boolValue == false && down["cluster"]?["problem"]?.stringValue != nil, "\(down.jsonText)")
        #expect((down["cluster"]?["outbox"]?.int64Value ?? 0) > 0, "\(down.jsonText)")

        try redis.start()
        let b = try Daemon(scenario, extra: Self.cluster(redis, node: "b"), store: scenario.directory + "/store-b")
        defer { _ = b.stop() }
        #expect(Self.eventually { Self.installations(b) == 30 }, "node b has \(String(describing: Self.installations(b)))")
        #expect(Self.eventually { a.metric("sokuho_cluster_replication_outbox") == 0 })
        #expect(a.metric("sokuho_cluster_connected") == 1)
    }

    @Test func aStoreRestoredFromABackupCatchesUpFromTheIDItCarries() throws {
        let redis = try RedisServerFixture()
        defer { redis.stop() }
        let scenario = try FanoutScenario()
        let a = try Daemon(scenario, extra: Self.cluster(redis, node: "a"))
        defer { _ = a.stop() }
        let storeB = scenario.directory + "/store-b"
        let b = try Daemon(scenario, extra: Self.cluster(redis, node: "b"), store: storeB)
        #expect(Self.register(a, 0..<20, in: scenario.directory).allSatisfy { $0 == "201" })
        #expect(Self.eventually { Self.installations(b) == 20 })
        // A hot backup of node b, then more changes it does not hold.
        let backup = scenario.directory + "/backup-b"
        let made = ChildProcess.run(SimulatorProcessTests.binary, ["store", "backup", backup, "--store", storeB])
        #expect(made.status == 0, "\(made.err)")
        #expect(b.stop() == 0)
        #expect(Self.register(a, 20..<35, in: scenario.directory).allSatisfy { $0 == "201" })
        #expect(Self.eventually { a.metric("sokuho_cluster_replication_outbox") == 0 }, "a published them all")
        let carried = try TokenStore(directory: backup, options: TokenStore.Options(readOnly: true)).replicationStatus()
        let carriedID = try #require(carried.applied.flatMap(StreamID.init))
        let newer = try redis.connect().range(of: ClusterKeys.registrations, from: "(\(carriedID)").count

        // A new node c from that backup applies exactly the entries after the id it carries.
        let storeC = scenario.directory + "/store-c"
        let restored = ChildProcess.run(SimulatorProcessTests.binary, ["store", "restore", backup, "--store", storeC])
        #expect(restored.status == 0, "\(restored.err)")
        let c = try Daemon(scenario, extra: Self.cluster(redis, node: "c"), store: storeC)
        defer { _ = c.stop() }
        #expect(Self.eventually { Self.installations(c) == 35 })
        #expect(c.metric("sokuho_cluster_replication_applied_total") == newer)
        #expect(c.metric("sokuho_cluster_replication_behind") == 0)
    }

    @Test func aNodeThatFellBehindTheTrimSaysSoUntilAPeersBackupReplacesItsStore() throws {
        let redis = try RedisServerFixture()
        defer { redis.stop() }
        let scenario = try FanoutScenario()
        // The shortest stream allowed, so that a stopped node's place is trimmed away quickly.
        let a = try Daemon(scenario, extra: Self.cluster(redis, node: "a", streamLength: 1_000))
        defer { _ = a.stop() }
        let storeB = scenario.directory + "/store-b"
        var b = try Daemon(scenario, extra: Self.cluster(redis, node: "b", streamLength: 1_000), store: storeB)
        #expect(Self.register(a, 0..<5, in: scenario.directory).allSatisfy { $0 == "201" })
        #expect(Self.eventually { Self.installations(b) == 5 })
        #expect(b.stop() == 0)

        // One request after another: about one stream entry each, well past the trim.
        #expect(Self.register(a, 5..<1_505, in: scenario.directory).allSatisfy { $0 == "201" })
        #expect(Self.eventually(60) { a.metric("sokuho_cluster_replication_outbox") == 0 }, "a published them all")
        let head = try #require(try redis.connect().head(of: ClusterKeys.registrations))
        #expect((head.entriesAdded ?? 0) > head.length, "the stream was trimmed: \(head)")

        b = try Daemon(scenario, extra: Self.cluster(redis, node: "b", streamLength: 1_000), store: storeB)
        #expect(Self.eventually { b.metric("sokuho_cluster_replication_behind") == 1 })
        #expect(Self.clusterReadiness(b)?["behind"]?.stringValue?.contains("trimmed") == true, "\(String(describing: Self.clusterReadiness(b)))")
        // It carries on with what is left: everything up to the stream's last entry, not the trimmed ones.
        #expect(Self.eventually { Self.clusterReadiness(b)?["applied"]?.stringValue == head.lastGenerated.description })
        // The counts may be up to 5 s old (a cache `/metrics` above may have filled before the apply).
        #expect(Self.eventually { (Self.installations(b) ?? 0) > 5 })
        let partial = try #require(Self.installations(b))
        #expect(partial > 5 && partial < 1_505, "b holds \(partial)")
        #expect(b.stop() == 0)
        #expect(b.child.stderr.contains("is behind"), "\(b.child.stderr)")
        #expect(b.child.stderr.contains("sokuho store restore"), "the log names the fix")

        // A new node with an empty store joining after the trim is behind as well: it must start from a backup.
        let c = try Daemon(scenario, extra: Self.cluster(redis, node: "c", streamLength: 1_000), store: scenario.directory + "/store-c")
        #expect(Self.eventually { c.metric("sokuho_cluster_replication_behind") == 1 })
        #expect(Self.clusterReadiness(c)?["behind"]?.stringValue?.contains("before this node read any") == true)
        #expect(c.stop() == 0)

        // A restart does not hide it: the store remembers.
        b = try Daemon(scenario, extra: Self.cluster(redis, node: "b", streamLength: 1_000), store: storeB)
        #expect(Self.eventually { b.metric("sokuho_cluster_replication_behind") == 1 })
        #expect(b.stop() == 0)

        // The fix: a peer's backup (hot), restored here; it carries a's applied id, past the trim.
        #expect(Self.eventually { Self.clusterReadiness(a)?["applied"]?.stringValue == head.lastGenerated.description },
                "a stored the id it reached: \(String(describing: Self.clusterReadiness(a)))")
        let backup = scenario.directory + "/backup-a"
        let made = ChildProcess.run(SimulatorProcessTests.binary, ["store", "backup", backup, "--store", scenario.store])
        #expect(made.status == 0, "\(made.err)")
        let restored = ChildProcess.run(SimulatorProcessTests.binary, ["store", "restore", backup, "--replace", "--store", storeB])
        #expect(restored.status == 0, "\(restored.err)")
        b = try Daemon(scenario, extra: Self.cluster(redis, node: "b", streamLength: 1_000), store: storeB)
        defer { _ = b.stop() }
        #expect(Self.installations(b) == 1_505)
        #expect(b.metric("sokuho_cluster_replication_behind") == 0)
        sleep(milliseconds: 1_500) // past a gap check and a read or two
        #expect(b.metric("sokuho_cluster_replication_behind") == 0 && Self.clusterReadiness(b)?["behind"] == .null)
    }

    @Test func registrationsAnsweredJustBeforeAKillReachTheOtherNodeAfterTheRestart() throws {
        let redis = try RedisServerFixture()
        redis.stop() // nothing can be published before the kill: every change waits in the outbox
        defer { redis.stop() }
        let scenario = try FanoutScenario()
        var a = try Daemon(scenario, extra: Self.cluster(redis, node: "a"))
        #expect(Self.register(a, 0..<40, in: scenario.directory).allSatisfy { $0 == "201" })
        kill(a.child.pid, SIGKILL)
        _ = a.child.wait()

        try redis.start()
        let b = try Daemon(scenario, extra: Self.cluster(redis, node: "b"), store: scenario.directory + "/store-b")
        defer { _ = b.stop() }
        a = try Daemon(scenario, extra: Self.cluster(redis, node: "a"))
        defer { _ = a.stop() }
        #expect(Self.eventually { Self.installations(b) == 40 }, "node b has \(String(describing: Self.installations(b)))")
        #expect(Self.eventually { a.metric("sokuho_cluster_replication_outbox") == 0 })
    }
}

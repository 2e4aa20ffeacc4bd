#if canImport(Glibc)
import Glibc
#endif
import Crypto
import Fanout
import JSONCore
import Simulator
import Testing
import TokenStore
import Vocabulary

/// Issue 13's warm standby, with the real binary: `sokuho store restore` and `sokuho serve
/// --standby` following a shipped backup until it is promoted.
@Suite struct StandbyTests {
    typealias Daemon = ServeTests.Daemon

    static func sokuho(_ arguments: [String]) -> (status: Int32, out: String, err: String) {
        ChildProcess.run(SimulatorProcessTests.binary, arguments)
    }

    /// 40 phones in region:0 at levels 0…3 registered in the scenario's store; the tokens a level-2 start reaches.
    static func registerPhones(_ scenario: FanoutScenario) throws -> Set<String> {
        let phones = (0..<40).map { FanoutScenario.Phone(id: "p\($0)", token: FanoutScenario.token($0), topics: [("region:0", UInt8($0 % 4))]) }
        try scenario.register(phones)
        return Set(phones.filter { $0.topics[0].1 <= 2 }.map(\.token))
    }

    static func exportLines(_ store: String) -> [Substring] {
        sokuho(["tokens", "export", "--store", store]).out.split(separator: "\n").sorted()
    }

    @Test func aRestoredBackupPassesTheStoreCheckAndHoldsTheSameTokens() throws {
        let scenario = try FanoutScenario()
        _ = try Self.registerPhones(scenario)
        let backup = scenario.directory + "/backup"
        #expect(Self.sokuho(["store", "backup", backup, "--store", scenario.store]).status == 0)
        let restored = scenario.directory + "/restored"
        let restore = Self.sokuho(["store", "restore", backup, "--store", restored])
        #expect(restore.status == 0, "\(restore.err)")
        #expect(restore.out.contains("40 installations"), "\(restore.out)")
        let check = Self.sokuho(["store", "check", "--store", restored, "--json"])
        #expect(check.status == 0 && check.out.contains(#""ok":true"#), "\(check.out) \(check.err)")
        let original = Self.exportLines(scenario.store)
        #expect(original.count == 40)
        #expect(Self.exportLines(restored) == original)
        // No staging directory or stale lock is left behind.
        #expect(!ChildProcess.run("ls", [restored]).out.split(separator: "\n").contains { $0.hasPrefix("restore-") })

        // A store is there now: replacing it is a decision (73 without --replace), and the old one is kept.
        let again = Self.sokuho(["store", "restore", backup + "/data.mdb", "--store", restored])
        #expect(again.status == 73 && again.err.contains("--replace"), "\(again.err)")
        let replaced = Self.sokuho(["store", "restore", backup + "/data.mdb", "--store", restored, "--replace"])
        #expect(replaced.status == 0, "\(replaced.err)")
        #expect(ChildProcess.run("sh", ["-c", "ls \(restored)/data.mdb.old-*"]).status == 0, "\(replaced.out)")
        #expect(Self.exportLines(restored) == original)
    }

    @Test func restoreRefusesAStoreThatIsOpenAndADamagedBackup() throws {
        let scenario = try FanoutScenario()
        _ = try Self.registerPhones(scenario)
        let backup = scenario.directory + "/backup"
        #expect(Self.sokuho(["store", "backup", backup, "--store", scenario.store]).status == 0)

        // Open in this process.
        let other = scenario.directory + "/other"
        do {
            let open = try TokenStore(directory: other)
            defer { open.close() }
            let refused = Self.sokuho(["store", "restore", backup, "--store", other, "--replace"])
            #expect(refused.status == 75, "\(refused.err)")
            #expect(refused.err.contains("open in another process") && refused.err.contains("systemctl stop sokuho"), "\(refused.err)")
        }

        // Open in a running daemon.
        let daemon = try Daemon(scenario)
        let live = Self.sokuho(["store", "restore", backup, "--store", scenario.store, "--replace"])
        #expect(live.status == 75, "\(live.err)")
        #expect(daemon.stop() == 0)

        // One flipped byte in the meta page: refused before anything of the store is touched.
        let damaged = scenario.directory + "/damaged"
        #expect(ChildProcess.run("mkdir", [damaged]).status == 0)
        var bytes = readFile(backup + "/data.mdb")
        bytes[16] ^= 0xff
        _ = writeFile(damaged, "data.mdb", bytes)
        let before = Self.exportLines(scenario.store)
        let corrupt = Self.sokuho(["store", "restore", damaged, "--store", scenario.store, "--replace"])
        #expect(corrupt.status == 65, "\(corrupt.err)")
        #expect(corrupt.err.contains("nothing was changed"), "\(corrupt.err)")
        #expect(Self.exportLines(scenario.store) == before)
        #expect(ChildProcess.run("sh", ["-c", "ls -d \(scenario.store)/restore-* \(scenario.store)/data.mdb.old-*"]).status != 0)
        #expect(Self.sokuho(["store", "restore", scenario.directory + "/nothing", "--store", other]).status == 66)
    }

    /// Polls `path` until `done` holds for the answer (10 s at most).
    static func poll(_ daemon: Daemon, _ path: String, until done: ((status: Int, body: String)) -> Bool) -> (status: Int, body: String) {
        var answer = daemon.curl("GET", path)
        for _ in 0..<200 where !done(answer) { usleep(50_000); answer = daemon.curl("GET", path) }
        return answer
    }

    @Test func aStandbySendsNothingFollowsTheShippedBackupAndDeliversOncePromoted() throws {
        let scenario = try FanoutScenario()
        let eligible = try Self.registerPhones(scenario)
        // An event the primary had accepted and not finished when it backed up: the standby must
        // not run it, the promoted standby must.
        let pending = startEvent(key: "eew-pending", groups: [("region:0", 2, "pending")], channel: "null")
        let now = WallClock.milliseconds()
        let canonical = try FanoutEvent(json: Array(pending.utf8)).canonicalJSON
        _ = try scenario.withStore { store in
            try store.write([.putEventSerial(EventSerialRecord(eventKey: "eew-pending", serial: 1, bodyHash: SHA256.hash(canonical), phase: .sending,
                                                               startedAt: now, updatedAt: now, body: canonical))])
        }
        // The primary's backup, shipped later; the standby starts on an empty store of its own.
        let staging = scenario.directory + "/staging"
        #expect(Self.sokuho(["store", "backup", staging, "--store", scenario.store]).status == 0)
        #expect(ChildProcess.run("rm", ["-r", scenario.store]).status == 0)
        let shipped = scenario.directory + "/shipped"
        #expect(ChildProcess.run("mkdir", [shipped]).status == 0)
        let daemon = try Daemon(scenario, extra: #","standby":true,"standbyBackupFile":"\#(shipped)/data.mdb""#)
        defer { _ = daemon.stop() }

        // Warm and checked, but not ready, and nothing is taken.
        let ready = Self.poll(daemon, "/readyz") { $0.body.contains(#""connectionsUp":2"#) && !$0.body.contains(#""credentialCheck":null"#) }
        #expect(ready.status == 503 && ready.body.contains(#""standby":true"#), "\(ready.body)")
        #expect(ready.body.contains(#""credentialCheck":{"ok":true"#), "\(ready.body)")
        let event = startEvent(key: "eew-standby", groups: [("region:0", 2, "standby")], channel: "null")
        let refused = daemon.curl("POST", "/v1/events", body: event)
        #expect(refused.status == 503, "\(refused.body)")
        #expect(try JSONParser.parse(refused.body)["error"]?["code"]?.stringValue == "standby")
        #expect(refused.body.contains("sokuho serve --promote"), "\(refused.body)")
        let registration = daemon.curl("POST", "/v1/installations", body: ServeTests.registration(nil, pushToStart: FanoutScenario.token(900)), admin: false)
        #expect(registration.status == 503 && registration.body.contains(#""standby""#), "\(registration.body)")
        #expect(daemon.curl("GET", "/metrics", admin: false).body.contains("\nsokuho_standby 1\n"))
        #expect(daemon.curl("GET", "/", admin: false).body.contains("STANDBY"))
        #expect(daemon.curl("GET", "/v1/tokens/stats").body.contains(#""installations":0"#))

        // The primary's timer ships a backup: SIGHUP looks at once (else within 30 s).
        #expect(rename(staging + "/data.mdb", shipped + "/data.mdb") == 0)
        kill(daemon.child.pid, SIGHUP)
        let stats = Self.poll(daemon, "/v1/tokens/stats") { $0.body.contains(#""installations":40"#) }
        #expect(stats.body.contains(#""installations":40"#), "\(stats.body) \(daemon.child.stderr)")
        usleep(300_000)
        #expect(scenario.running.counters.accepted == 0)
        #expect(!daemon.curl("GET", "/v1/events/eew-pending/1").body.contains(#""state":"done""#))

        let configFile = scenario.directory + "/sokuho.json"
        // The test's daemon listens on a picked port; a deployment's configuration names its own.
        let promoted = Self.sokuho(["serve", "--promote", "--config", configFile, "--listen", "127.0.0.1:\(daemon.port)"])
        #expect(promoted.status == 0, "\(promoted.err)")
        #expect(promoted.out.contains(#""promoted":true"#), "\(promoted.out)")
        #expect(daemon.child.stderr.contains("promoted to primary"), "\(daemon.child.stderr)")
        let primary = Self.poll(daemon, "/readyz") { $0.status == 200 }
        #expect(primary.status == 200 && primary.body.contains(#""standby":false"#), "\(primary.body)")
        #expect(daemon.curl("GET", "/metrics", admin: false).body.contains("\nsokuho_standby 0\n"))
        let resumed = try daemon.waitForEvent("/v1/events/eew-pending/1")
        #expect(resumed["report"]?["delivered"]?.int64Value == Int64(eligible.count), "\(resumed.jsonText)")
        #expect(promoted.out.contains("1 unfinished events resumed"), "\(promoted.out)")

        let accepted = daemon.curl("POST", "/v1/events", body: event)
        #expect(accepted.status == 202, "\(accepted.body)")
        let finished = try daemon.waitForEvent(try #require(try JSONParser.parse(accepted.body)["url"]?.stringValue))
        #expect(finished["report"]?["delivered"]?.int64Value == Int64(eligible.count), "\(finished.jsonText)")
        #expect(Set(scenario.devicePushes().keys) == eligible)
        // Once the primary, it stays one: promoting again changes nothing.
        let again = Self.sokuho(["serve", "--promote", "--config", configFile, "--listen", "127.0.0.1:\(daemon.port)"])
        #expect(again.status == 0 && again.out.contains(#""promoted":false"#), "\(again.out) \(again.err)")
    }

    @Test func sigusr1PromotesAStandbyAndPromoteWithoutADaemonExits69() throws {
        let scenario = try FanoutScenario()
        _ = try Self.registerPhones(scenario)
        let daemon = try Daemon(scenario, extra: #","standby":true"#)
        let configFile = scenario.directory + "/sokuho.json"
        // Its start says it is a standby (issue 24): in the JSON line and in the summary on stderr.
        #expect(daemon.startLine["standby"]?.boolValue == true, "\(daemon.startLine)")
        let summary = "sokuho serve: standby (sends nothing until promoted), listening on"
        for _ in 0..<500 where !daemon.child.stderr.contains(summary) { usleep(20_000) }  // printed just after the JSON line (≤ 10 s)
        #expect(daemon.child.stderr.contains(summary), "\(daemon.child.stderr)")
        #expect(daemon.curl("POST", "/v1/events", body: startEvent(key: "eew-usr1", groups: [("region:0", 2, "x")], channel: "null")).status == 503)
        kill(daemon.child.pid, SIGUSR1)
        let primary = Self.poll(daemon, "/v1/events") { _ in
            !daemon.curl("GET", "/metrics", admin: false).body.contains("\nsokuho_standby 1\n")
        }
        #expect(primary.status == 200)
        let accepted = daemon.curl("POST", "/v1/events", body: startEvent(key: "eew-usr1", groups: [("region:0", 2, "x")], channel: "null"))
        #expect(accepted.status == 202, "\(accepted.body)")
        _ = try daemon.waitForEvent(try #require(try JSONParser.parse(accepted.body)["url"]?.stringValue))
        #expect(daemon.stop() == 0)
        #expect(daemon.child.stderr.contains("promoted to primary"), "\(daemon.child.stderr)")
        let unreachable = Self.sokuho(["serve", "--promote", "--config", configFile, "--listen", "127.0.0.1:\(daemon.port)"])
        #expect(unreachable.status == 69, "\(unreachable.out) \(unreachable.err)")
    }
}

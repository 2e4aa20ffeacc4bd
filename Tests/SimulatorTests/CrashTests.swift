#if canImport(Glibc)
import Glibc
#endif
import IO
import JSONCore
import Testing

/// Crash runs (issue 14): the real `sokuho fanout` and `sokuho serve` processes killed with SIGKILL
/// at seeded random points of one start event's fan-out, restarted each time, until the event
/// completes; after every kill `sokuho store check` passes. At the end every eligible phone has a
/// start, no ineligible one has anything, and the duplicates stay within kills × the in-flight
/// window. And a full disk (a small tmpfs, mounted by the test: it runs as root) during an import,
/// at a store's creation, before and during a fan-out: a clear error naming the full disk, exit 74,
/// never a crash, and a store that still opens and checks. The long form of the kill runs is
/// `Toolchain/crash-run` (100k phones, 20 kills).
@Suite(.serialized) struct CrashTests {
    /// Eligible phones: region:0 at min levels 0…3, all reached by the event's level 3.
    static let eligibleCount = 2_000
    /// Ineligible phones: region:0 at min level 5 (above the event's level), and region:1.
    static let ineligibleCount = 200
    /// Kills at k accepted pushes, k spread over the run (besides one before any push).
    static let killsDuringRun = 10
    /// 1 connection × 32 streams: the pool's `HandOutGate` lets 32 + 16 (the wire and the smallest
    /// batch) be handed out unanswered.
    static let connections = 1
    static let streams = 32
    static let inFlightWindow = 32 + 16
    /// Slow enough answers (32 on the wire / 100 ms ≈ 320 pushes/s) that ten kills land inside a
    /// 2,000-phone run, fast enough that the suite stays short.
    static let latency: Duration = .milliseconds(100)

    /// The seed of the kill points: `SOKUHO_CRASH_SEED` when set (to replay a printed run), else
    /// the clock. Printed by every test.
    static func seed() -> UInt64 {
        if let text = getenv("SOKUHO_CRASH_SEED"), let seed = UInt64(String(cString: text)) { return seed }
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return UInt64(now.tv_sec) &* 1_000_003 &+ UInt64(now.tv_nsec)
    }

    /// The test's phones in a store, and the event (onUnknown resend, so every eligible phone
    /// must end with a start; a long deadline, since the restarts keep the first run's).
    final class Crash {
        let scenario: FanoutScenario
        let eligible: [String]
        let ineligible: [String]
        let eventJSON: String
        let eventPath: String
        let seed: UInt64
        /// Accepted-push counts to kill at, ascending; 0 is the kill before any push.
        let killPoints: [Int]
        var kills = 0

        init(_ name: String) throws {
            scenario = try FanoutScenario { $0.latency = CrashTests.latency }
            eligible = (0..<CrashTests.eligibleCount).map { FanoutScenario.token($0) }
            ineligible = (0..<CrashTests.ineligibleCount).map { FanoutScenario.token($0, prefix: "b0") }
            var phones = eligible.enumerated().map { n, token in
                FanoutScenario.Phone(id: "e\(n)", token: token, topics: [("region:0", UInt8(n % 4))], broadcast: n % 2 == 0)
            }
            phones += ineligible.enumerated().map { n, token in
                FanoutScenario.Phone(id: "i\(n)", token: token, topics: [(n % 2 == 0 ? "region:0" : "region:1", n % 2 == 0 ? 5 : 0)])
            }
            try scenario.register(phones)
            eventJSON = startEvent(key: "eew-crash", groups: [("region:0", 3, "crash")], channel: "null", extra: #","onUnknown":"resend""#)
                .replacing(#""deadlineSeconds":30"#, with: #""deadlineSeconds":900"#)
            eventPath = scenario.event("event.json", eventJSON)
            seed = CrashTests.seed()
            var random = SplitMix(seed)
            let count = CrashTests.eligibleCount
            killPoints = [0] + (0..<CrashTests.killsDuringRun).map { _ in count / 20 + Int(random.next() % UInt64(count * 9 / 10)) }.sorted()
            print("\(name): seed \(seed) (SOKUHO_CRASH_SEED), kill points at accepted pushes \(killPoints)")
            try #require(access(SimulatorProcessTests.binary, X_OK) == 0, "build the binary first: swift build")
        }

        var accepted: Int { LineCounter(path: scenario.log).count() }

        /// Waits until the simulator has accepted `point` pushes in all, or `child` ended by itself
        /// (its exit status then). Kill point 0: a few milliseconds after the start, before any push.
        func waitFor(_ point: Int, _ child: ChildProcess, lines: LineCounter) -> Int32? {
            if point == 0 {
                usleep(UInt32(2_000 + seed % 20_000))
                return exited(child)
            }
            let giveUp = MonotonicInstant.now() + .seconds(60)
            while lines.count() < point && MonotonicInstant.now() < giveUp {
                if let status = exited(child) { return status }
                usleep(1_000)
            }
            return nil
        }

        /// SIGKILL, then what the simulator still answers goes out (within its latency), then the
        /// store is checked by the real binary.
        func killAndCheck(_ child: ChildProcess, at point: Int, what: String) throws -> Int32 {
            kill(child.pid, SIGKILL)
            let status = child.wait()
            usleep(300_000)
            if status == 128 + SIGKILL { kills += 1 }
            let check = ChildProcess.run(SimulatorProcessTests.binary, ["store", "check", "--store", scenario.store])
            print("\(what) killed at \(point) (accepted \(accepted)): exit \(status), store check exit \(check.status)")
            try #require(check.status == 0, "store check after the kill at \(point): \(check.out) \(check.err)")
            return status
        }

        /// Every eligible phone has a start, none of the others has anything, and the starts
        /// beyond one per phone are within kills × the window. Returns the duplicates.
        @discardableResult
        func verify(_ what: String) -> Int {
            let pushes = scenario.devicePushes()
            let startsPerPhone = pushes.mapValues { $0.filter { $0.body["aps"]?["event"]?.stringValue == "start" }.count }
            let never = eligible.filter { (startsPerPhone[$0] ?? 0) == 0 }.count
            let duplicates = eligible.reduce(0) { $0 + max(0, (startsPerPhone[$1] ?? 0) - 1) }
            let strays = ineligible.reduce(0) { $0 + (pushes[$1]?.count ?? 0) }
            let bound = kills * CrashTests.inFlightWindow
            print("\(what): seed \(seed), \(kills) kills, \(eligible.count) phones, never started \(never), "
                + "duplicates \(duplicates) ≤ bound \(bound) (\(kills) × window \(CrashTests.inFlightWindow)), ineligible pushed \(strays)")
            #expect(never == 0, "\(never) eligible phones never got a start (seed \(seed))")
            #expect(duplicates <= bound, "\(duplicates) duplicate starts, more than \(kills) kills × \(CrashTests.inFlightWindow) (seed \(seed))")
            #expect(strays == 0, "\(strays) pushes to ineligible phones (seed \(seed))")
            #expect(kills >= CrashTests.killsDuringRun / 2, "only \(kills) kills landed before the event completed (seed \(seed))")
            return duplicates
        }
    }

    @Test func aFanoutKilledAtRandomPointsAndRerunEachTimeReachesEveryPhoneWithDuplicatesWithinTheWindow() throws {
        let crash = try Crash("fanout")
        let pool = ["--connections", "\(Self.connections)", "--streams", "\(Self.streams)"]
        let arguments = ["fanout", crash.eventPath, "--json"] + crash.scenario.connection + pool
        let lines = LineCounter(path: crash.scenario.log)
        var finished = false
        for point in crash.killPoints {
            let child = ChildProcess(SimulatorProcessTests.binary, arguments)
            if let status = crash.waitFor(point, child, lines: lines) {
                // Ended before the kill point: the event completed.
                #expect(status == 0, "fanout ended with \(status) before the kill at \(point): \(child.stderr)")
                finished = true
                break
            }
            let status = try crash.killAndCheck(child, at: point, what: "fanout")
            if status != 128 + SIGKILL {
                #expect(status == 0, "fanout ended with \(status): \(child.stderr)")
                finished = true
                break
            }
        }
        if !finished {
            let run = ChildProcess.run(SimulatorProcessTests.binary, arguments)
            #expect(run.status == 0, "the last rerun: exit \(run.status)\n\(run.out)\n\(run.err)")
            let report = try? JSONParser.parse(run.out)
            let runs = Int(report?["runs"]?.int64Value ?? -1)
            print("fanout, last rerun: delivered \(report?["delivered"]?.int64Value ?? -1), "
                + "resent after unknown \(report?["resentAfterUnknown"]?.int64Value ?? -1), runs \(runs)")
            // Every killed run that got as far as recording the event counts. A kill may land
            // before that: the kill before any push, and a rerun killed at once because answers
            // to the dead run's last requests (the simulator counts an answer when it leaves)
            // carried the count past the next kill point. So not every kill is a run, but most
            // are (a resumed run that did not count itself left `runs` at 2 after 11 kills).
            #expect(runs >= crash.kills / 2 && runs <= crash.kills + 1, "runs \(runs) after \(crash.kills) kills")
        }
        let check = ChildProcess.run(SimulatorProcessTests.binary, ["store", "check", "--store", crash.scenario.store])
        #expect(check.status == 0, "\(check.out) \(check.err)")
        crash.verify("fanout")
    }

    @Test func aDaemonKilledAtRandomPointsResumesTheEventAtEachStartUntilItIsDone() throws {
        let crash = try Crash("serve")
        let lines = LineCounter(path: crash.scenario.log)
        var daemon = try ServeTests.Daemon(crash.scenario, connections: Self.connections, streams: Self.streams)
        let submitted = daemon.curl("POST", "/v1/events", body: crash.eventJSON)
        // The kill before any push: at once after the 202 (the event is recorded `.sending` first).
        kill(daemon.child.pid, SIGKILL)
        try #require(submitted.status == 202, "\(submitted.body)")
        let url = try #require(try JSONParser.parse(submitted.body)["url"]?.stringValue)
        _ = try crash.killAndCheck(daemon.child, at: 0, what: "serve")
        for point in crash.killPoints.dropFirst() {
            // Restarted, never resubmitted: the daemon resumes the event from its record.
            daemon = try ServeTests.Daemon(crash.scenario, connections: Self.connections, streams: Self.streams)
            if let status = crash.waitFor(point, daemon.child, lines: lines) {
                Issue.record("the daemon ended by itself with \(status) before the kill at \(point): \(daemon.child.stderr)")
                return
            }
            let state = (try? JSONParser.parse(daemon.curl("GET", url).body))?["state"]?.stringValue
            if state == "done" {  // completed before the kill point
                #expect(daemon.stop() == 0)
                break
            }
            _ = try crash.killAndCheck(daemon.child, at: point, what: "serve")
        }
        daemon = try ServeTests.Daemon(crash.scenario, connections: Self.connections, streams: Self.streams)
        var finished: JSONValue?
        for _ in 0..<600 {
            let answer = daemon.curl("GET", url)
            if let json = try? JSONParser.parse(answer.body), json["state"]?.stringValue != "queued", json["state"]?.stringValue != "running" {
                finished = json
                break
            }
            usleep(100_000)
        }
        #expect(daemon.stop() == 0, "\(daemon.child.stderr)")
        let report = try #require(finished, "the event did not finish after the last restart")
        #expect(report["state"]?.stringValue == "done", "\(report.jsonText)")
        print("serve, last run: \(report.jsonText.prefix(600))")
        let runs = Int(report["report"]?["runs"]?.int64Value ?? -1)
        // As for the fanout test: most kills are runs, not necessarily every one.
        #expect(runs >= crash.kills / 2 && runs <= crash.kills + 1, "runs \(runs) after \(crash.kills) kills")
        let check = ChildProcess.run(SimulatorProcessTests.binary, ["store", "check", "--store", crash.scenario.store])
        #expect(check.status == 0, "\(check.out) \(check.err)")
        crash.verify("serve")
    }

    // MARK: Full disk

    /// A tmpfs of `size` at `directory` (created). Root runs the tests; a mount that fails is a
    /// failure naming why, never a skip.
    static func mountTmpfs(_ directory: String, size: String) throws {
        mkdir(directory, 0o750)
        let run = ChildProcess.run("mount", ["-t", "tmpfs", "-o", "size=\(size)", "tmpfs", directory])
        try #require(run.status == 0, "mount -t tmpfs -o size=\(size) at \(directory) failed (exit \(run.status)): \(run.err) — the full-disk tests need root (mount)")
    }

    static func unmount(_ directory: String) {
        let run = ChildProcess.run("umount", [directory])
        if run.status != 0 { print("umount \(directory): \(run.err)") }
    }

    /// Fills the file system holding `directory` with one file, until ENOSPC.
    static func fill(_ directory: String) -> String {
        let path = directory + "/filler"
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        let chunk = [UInt8](repeating: 0x5a, count: 4096)
        while chunk.withUnsafeBytes({ write(fd, $0.baseAddress, $0.count) }) > 0 {}
        close(fd)
        return path
    }

    @Test func anImportIntoAFullDiskFailsNamingTheFullDiskAndKeepsTheBatchesBeforeIt() throws {
        let directory = temporaryDirectory("sokuho-nospace")
        let mount = directory + "/disk"
        try Self.mountTmpfs(mount, size: "4m")
        defer { Self.unmount(mount) }
        let store = mount + "/store"
        let lines = directory + "/tokens.jsonl"
        let generated = ChildProcess.run("sh", ["-c", "\"$0\" tokens generate --count 40000 --levels 4 > \"$1\"", SimulatorProcessTests.binary, lines])
        try #require(generated.status == 0, "\(generated.err)")

        // Into a new store: nothing is kept (it is written only whole), the working copy goes and
        // gives its space back, and the message names the store, not the working copy.
        let fresh = ChildProcess.run(SimulatorProcessTests.binary, ["tokens", "import", lines, "--store", store, "--batch", "1000"])
        #expect(fresh.status == 74, "exit \(fresh.status): \(fresh.out) \(fresh.err)")
        #expect(fresh.err.contains("the disk holding the token store at \(store) is full") && fresh.err.contains("nothing imported"), "\(fresh.err)")
        #expect(access(store + "/.importing", F_OK) != 0 && access(store + "/data.mdb", F_OK) != 0)
        // Into an existing store: the batches before the full disk stay.
        let empty = writeFile(directory, "empty.jsonl", "")
        let created = ChildProcess.run(SimulatorProcessTests.binary, ["tokens", "import", empty, "--store", store])
        try #require(created.status == 0, "\(created.err)")
        let run = ChildProcess.run(SimulatorProcessTests.binary, ["tokens", "import", lines, "--store", store, "--batch", "1000"])
        print("import into a full disk: exit \(run.status): \(run.err)")
        #expect(run.status == 74, "exit \(run.status): \(run.out) \(run.err)")
        // The message itself, not the path: "the disk holding the token store at … is full".
        #expect(run.err.contains("the disk holding the token store at \(store) is full"), "the error does not name the full disk: \(run.err)")
        // "(N lines had been imported)": whole batches, and they are in the store.
        let imported = run.err.split(separator: "(").last.flatMap { Int($0.split(separator: " ").first ?? "") } ?? -1
        #expect(imported > 0 && imported % 1000 == 0, "\(run.err)")

        let stats = ChildProcess.run(SimulatorProcessTests.binary, ["tokens", "stats", "--store", store])
        #expect(stats.status == 0, "tokens stats after the full disk: \(stats.out) \(stats.err)")
        let installations = stats.out.split(separator: "\n").first { $0.hasPrefix("installations ") }
            .flatMap { Int($0.dropFirst("installations ".count).prefix { $0.isNumber }) } ?? -1
        print("after the full disk: \(installations) installations, \(imported) lines reported imported")
        #expect(installations >= imported && installations > 0, "\(stats.out)")
        let check = ChildProcess.run(SimulatorProcessTests.binary, ["store", "check", "--store", store])
        #expect(check.status == 0, "store check after the full disk: \(check.out) \(check.err)")
    }

    @Test func aStoreCreatedOnAFullDiskIsADiskFullErrorNotABusError() throws {
        // LMDB writes its lock file through a shared mmap: on a full tmpfs a sparse lock file made
        // the first open die of SIGBUS (exit 135) before any error could be reported.
        let directory = temporaryDirectory("sokuho-nospace")
        let mount = directory + "/disk"
        try Self.mountTmpfs(mount, size: "1m")
        defer { Self.unmount(mount) }
        let store = mount + "/store"
        let lines = directory + "/tokens.jsonl"
        let generated = ChildProcess.run("sh", ["-c", "\"$0\" tokens generate --count 10 > \"$1\"", SimulatorProcessTests.binary, lines])
        try #require(generated.status == 0, "\(generated.err)")
        let filler = Self.fill(mount)
        let run = ChildProcess.run(SimulatorProcessTests.binary, ["tokens", "import", lines, "--store", store])
        print("a new store on a full disk: exit \(run.status): \(run.err.prefix(300))")
        #expect(run.status == 74, "exit \(run.status) (135 is SIGBUS): \(run.err.prefix(2000))")
        #expect(run.err.contains("the disk holding the token store at \(store) is full"), "the error does not name the full disk: \(run.err.prefix(2000))")
        unlink(filler)
        let again = ChildProcess.run(SimulatorProcessTests.binary, ["tokens", "import", lines, "--store", store])
        #expect(again.status == 0, "with space again: exit \(again.status): \(again.err.prefix(2000))")
        let check = ChildProcess.run(SimulatorProcessTests.binary, ["store", "check", "--store", store])
        #expect(check.status == 0, "\(check.out) \(check.err)")
    }

    @Test func aFanoutOnAFullDiskFailsNamingTheFullDiskAndTheStoreStillOpensAndTheEventCompletesLater() throws {
        let scenario = try FanoutScenario()
        try Self.mountTmpfs(scenario.store, size: "4m")
        defer { Self.unmount(scenario.store) }
        let phones = (0..<500).map { FanoutScenario.Phone(id: "p\($0)", token: FanoutScenario.token($0), topics: [("region:0", 0)]) }
        try scenario.register(phones)
        let eventPath = scenario.event("event.json", startEvent(key: "eew-full", groups: [("region:0", 3, "full")], channel: "null"))
        let filler = Self.fill(scenario.store)
        let arguments = ["fanout", eventPath, "--json"] + scenario.connection
        let run = ChildProcess.run(SimulatorProcessTests.binary, arguments)
        print("fan-out on a full disk: exit \(run.status): \(run.err)")
        #expect(run.status == 74, "exit \(run.status): \(run.out) \(run.err)")
        // The message itself, not the path: "the disk holding the token store at … is full".
        #expect(run.err.contains("the disk holding the token store at \(scenario.store) is full"), "the error does not name the full disk: \(run.err)")
        let stats = ChildProcess.run(SimulatorProcessTests.binary, ["tokens", "stats", "--store", scenario.store])
        #expect(stats.status == 0, "tokens stats on the full disk: \(stats.out) \(stats.err)")
        let check = ChildProcess.run(SimulatorProcessTests.binary, ["store", "check", "--store", scenario.store])
        #expect(check.status == 0, "store check on the full disk: \(check.out) \(check.err)")

        // Space again: the same event runs to the end.
        unlink(filler)
        let again = ChildProcess.run(SimulatorProcessTests.binary, arguments)
        #expect(again.status == 0, "exit \(again.status): \(again.out) \(again.err)")
        let starts = scenario.devicePushes()
        #expect(phones.allSatisfy { (starts[$0.token]?.count ?? 0) >= 1 }, "a phone got no start once the disk had space")
    }

    @Test func aDiskThatFillsDuringAFanoutNeitherCrashesItNorCostsAPhone() throws {
        let scenario = try FanoutScenario { $0.latency = CrashTests.latency }
        try Self.mountTmpfs(scenario.store, size: "8m")
        defer { Self.unmount(scenario.store) }
        let phones = (0..<Self.eligibleCount).map { FanoutScenario.Phone(id: "p\($0)", token: FanoutScenario.token($0), topics: [("region:0", 0)]) }
        try scenario.register(phones)
        let event = startEvent(key: "eew-filling", groups: [("region:0", 3, "filling")], channel: "null", extra: #","onUnknown":"resend""#)
            .replacing(#""deadlineSeconds":30"#, with: #""deadlineSeconds":900"#)
        let eventPath = scenario.event("event.json", event)
        let arguments = ["fanout", eventPath, "--json"] + scenario.connection + ["--connections", "\(Self.connections)", "--streams", "\(Self.streams)"]
        let child = ChildProcess(SimulatorProcessTests.binary, arguments)
        let lines = LineCounter(path: scenario.log)
        let giveUp = MonotonicInstant.now() + .seconds(60)
        while lines.count() < Self.eligibleCount / 4 && MonotonicInstant.now() < giveUp && exited(child) == nil { usleep(1_000) }
        let filledAt = lines.count()
        let filler = Self.fill(scenario.store)
        _ = child.readRest()
        let status = child.wait()
        // A running fan-out's checkpoints rewrite the same few pages, and LMDB reuses the pages the
        // transactions before freed: measured, the run ends normally on the full disk. A write that
        // needs a new page would fail, and the run stop naming the full disk. Never a crash.
        print("a disk filled at \(filledAt) accepted pushes: fanout exit \(status): \(child.stderr.prefix(300))")
        #expect(status == 0 || status == 74, "exit \(status): \(child.stderr.prefix(2000))")
        if status == 74 {
            #expect(child.stderr.contains("the disk holding the token store at \(scenario.store) is full"), "\(child.stderr.prefix(2000))")
        }
        let check = ChildProcess.run(SimulatorProcessTests.binary, ["store", "check", "--store", scenario.store])
        #expect(check.status == 0, "store check on the full disk: \(check.out) \(check.err)")

        unlink(filler)
        let again = ChildProcess.run(SimulatorProcessTests.binary, arguments)
        #expect(again.status == 0, "exit \(again.status): \(again.out) \(again.err)")
        let starts = scenario.devicePushes().mapValues(\.count)
        let never = phones.filter { (starts[$0.token] ?? 0) == 0 }.count
        let duplicates = starts.values.reduce(0) { $0 + max(0, $1 - 1) }
        print("after the full disk: never started \(never), duplicates \(duplicates) ≤ window \(Self.inFlightWindow)")
        #expect(never == 0)
        #expect(duplicates <= Self.inFlightWindow)
    }
}

/// SplitMix64: the kill points from a printed seed.
struct SplitMix {
    private var state: UInt64
    init(_ seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// The child's exit status if it has ended (reaped here), else nil.
func exited(_ child: ChildProcess) -> Int32? {
    var status: Int32 = 0
    guard waitpid(child.pid, &status, WNOHANG) == child.pid else { return nil }
    let signal = status & 0x7f
    return signal == 0 ? (status >> 8) & 0xff : 128 + signal
}

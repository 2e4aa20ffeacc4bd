#if canImport(Glibc)
import Glibc
#endif
import IO
import JSONCore
import Simulator
import Testing

/// A real `sokuho fanout` process killed with SIGKILL mid-way, then the event run again: the
/// checkpoints in the store decide who gets a start, so no phone is forgotten and none gets a
/// second start it was not meant to (the README's "Events": resume, dedup and supersede).
@Suite struct FanoutResumeTests {
    /// Phones in one region, all at level 0: every one is eligible.
    static let phoneCount = 12_000
    /// The pool of the killed runs: 2 connections × 100 streams, so at most 2 × 100 + 50 = 250
    /// starts handed out unanswered (the pool's `HandOutGate`: the wire plus a batch of a quarter).
    static let pool = ["--connections", "2", "--streams", "100"]
    static let inFlightWindow = 2 * 100 + 50

    @Test(arguments: [2_000, 7_000])
    func afterAKillTheRerunSendsWhatWasNeverSubmittedAndNeverASecondStart(killAt: Int) throws {
        let killed = try KilledFanout(event: startEvent(groups: [("region:0", 3, "one")]), killAt: killAt)
        let run = killed.scenario.fanout(killed.eventPath, Self.pool)
        let report = try JSONParser.parse(run.out)
        let unknown = Int(report["unknown"]?.int64Value ?? -1)
        // Starts in flight at the kill have an unknown outcome: exit 1.
        #expect(run.code == (unknown > 0 ? .refused : .success), "\(run)")
        let (_, never, twice) = killed.starts()
        print("resume (report), kill at \(killed.acceptedAtKill) accepted: rerun sent \(killed.acceptedSinceKill()), unknown \(unknown), "
            + "answered before the restart \(report["answeredBeforeRestart"]?.int64Value ?? -1), never started \(never), twice \(twice)")
        #expect(killed.acceptedAtKill >= killAt)
        #expect(twice == 0, "\(twice) phones got two starts")
        // A phone without any start is one whose start was in flight: counted unknown, not resent.
        #expect(never <= unknown, "\(never) phones never got a start, but only \(unknown) were reported unknown")
        #expect(unknown <= Self.inFlightWindow, "unknown \(unknown)")
        #expect(report["resentAfterUnknown"]?.int64Value == 0)
        #expect(report["delivered"]?.int64Value == Int64(killed.acceptedSinceKill()))
        #expect(report["runs"]?.int64Value == 2)
    }

    /// Issue 23: an app with an Android side scans its FCM tokens apart from the APNs ones, each
    /// with its own position in the checkpoint. Killed while both are under way (Android phones no
    /// longer wait for every iOS start), the rerun resumes each from its own position: no phone of
    /// either platform gets a second start, and one that got none was in flight at the kill.
    @Test func aMixedStoreKilledMidEventResumesEachPlatformFromItsOwnPositionNoPhoneTwice() throws {
        // FCM: 1 connection × the 100 streams FCM grants (250 configured) + a batch of 62 handed
        // out unanswered at most (with the gate sized for 250: 312, and 462 unknowns seen).
        let pool = Self.pool + ["--fcm-connections", "1"]
        let fcmWindow = 100 + 62
        let killed = try KilledFanout(event: startEvent(groups: [("region:0", 3, "one")], channel: "null"), killAt: 3_000, phoneCount: 6_000,
                                      androidCount: 4_000, pool: pool)
        // Both platforms were under way at the kill: the Android phones did not wait for the iOS ones.
        let atKill = (ios: killed.starts().perPhone.count, android: killed.androidStarts().perPhone.count)
        #expect(atKill.android > 0 && atKill.ios < 6_000, "at the kill: \(atKill)")
        let run = killed.scenario.fanout(killed.eventPath, killed.scenario.android + pool)
        let report = try JSONParser.parse(run.out)
        let unknown = Int(report["unknown"]?.int64Value ?? -1)
        #expect(run.code == (unknown > 0 ? .refused : .success), "\(run)")
        let ios = killed.starts(), android = killed.androidStarts()
        print("resume (mixed), kill at \(killed.acceptedAtKill) accepted (iOS \(atKill.ios), Android \(atKill.android)): rerun sent "
            + "\(killed.acceptedSinceKill()), unknown \(unknown), never started iOS \(ios.never) Android \(android.never), twice \(ios.twice + android.twice)")
        #expect(ios.twice == 0 && android.twice == 0, "\(ios.twice) iOS and \(android.twice) Android phones got two starts")
        #expect(ios.never + android.never <= unknown, "\(ios.never + android.never) phones never got a start, but only \(unknown) were reported unknown")
        #expect(unknown <= Self.inFlightWindow + fcmWindow, "unknown \(unknown)")
        #expect(report["delivered"]?.int64Value == Int64(killed.acceptedSinceKill()))
        #expect(report["runs"]?.int64Value == 2)
        // Each lane's books are its own phones': the unknowns of the FCM lane are Android phones
        // (the report said unknown 1,226, all Android, beside android.unknown 0), its delivered
        // are the Android starts the rerun sent, and every total is the lanes' sum.
        func count(_ value: JSONValue?, _ name: String) -> Int { Int(value?[name]?.int64Value ?? -1) }
        let apns = report["lanes"]?["apns"], fcm = report["lanes"]?["fcm"]
        #expect(android.never <= count(fcm, "unknown") && count(fcm, "unknown") <= fcmWindow, "Android never \(android.never), FCM lane \(String(describing: fcm))")
        #expect(ios.never <= count(apns, "unknown") && count(apns, "unknown") <= Self.inFlightWindow, "iOS never \(ios.never), APNs lane \(String(describing: apns))")
        #expect(count(fcm, "delivered") == android.perPhone.count - atKill.android, "\(String(describing: fcm))")
        #expect(count(apns, "delivered") == ios.perPhone.count - atKill.ios, "\(String(describing: apns))")
        for name in ["targets", "delivered", "unknown", "expired", "answeredBeforeRestart", "duplicatesAvoided", "resentAfterBackOff", "tokensRemoved"] {
            #expect(count(report, name) == count(apns, name) + count(fcm, name), "\(name): \(report)")
        }
        for name in ["targets", "delivered", "unknown", "skipped"] {
            #expect(count(report["android"], name) == count(fcm, name), "android.\(name): \(report)")
        }
    }

    @Test func withOnUnknownResendEveryPhoneGetsAStartAndTheDuplicatesAreCounted() throws {
        let event = startEvent(groups: [("region:0", 3, "one")], extra: #","onUnknown":"resend""#)
        let killed = try KilledFanout(event: event, killAt: 4_000)
        let run = killed.scenario.fanout(killed.eventPath, Self.pool)
        #expect(run.code == .success, "\(run)")
        let report = try JSONParser.parse(run.out)
        let resent = Int(report["resentAfterUnknown"]?.int64Value ?? -1)
        let (starts, never, twice) = killed.starts()
        print("resume (resend), kill at \(killed.acceptedAtKill) accepted: rerun sent \(killed.acceptedSinceKill()), resent after unknown \(resent), "
            + "twice \(twice)")
        #expect(never == 0, "\(never) phones never got a start")
        #expect(starts.values.allSatisfy { $0 <= 2 })
        // Every duplicate is a start the rerun sent again after an unknown outcome, and says so.
        #expect(twice <= resent, "\(twice) phones got two starts, but the report counts \(resent) resent")
        #expect(resent <= Self.inFlightWindow, "resent \(resent)")
        #expect(report["unknown"]?.int64Value == 0)
    }

    @Test func startsWaitingForABackOffResendWhenKilledAreSentByTheRerunOnceEvenWithOnUnknownReport() throws {
        // 30% of pushes answered 429 with Retry-After 2 s: they wait off the wire, holding room in
        // the gate, and the run stalls with the gate full of them. Killed 0.5 s after 100 accepted,
        // well inside the 2 s, most of the killed run's unanswered starts provably never reached
        // APNs; the rerun must send them (`onUnknown: report` holds only for what was on a wire).
        let killed = try KilledFanout(event: startEvent(groups: [("region:0", 3, "one")]), killAt: 100, phoneCount: 400,
                                      pause: .milliseconds(500)) { simulator in
            simulator.faults = [("TooManyRequests", 0.3)]
            simulator.retryAfterSeconds = 2
        }
        let run = killed.scenario.fanout(killed.eventPath, Self.pool)
        let report = try JSONParser.parse(run.out)
        let unknown = Int(report["unknown"]?.int64Value ?? -1)
        let resumed = Int(report["resentAfterBackOff"]?.int64Value ?? -1)
        let failed = report["failed"]?.objectMembers?.reduce(0) { $0 + Int($1.1.int64Value ?? 0) } ?? -1
        let (starts, never, twice) = killed.starts()
        print("back-off at the kill, \(killed.acceptedAtKill) accepted: resent after back-off \(resumed), unknown \(unknown), "
            + "failed \(failed), never started \(never), twice \(twice)")
        #expect(resumed > 0, "the rerun sent none of the starts that were waiting for their back-off resend")
        #expect(twice == 0, "\(twice) phones got two starts")
        #expect(starts.values.allSatisfy { $0 <= 1 })
        // What was held off the wire is no longer counted unknown: both together stay in the gate.
        #expect(unknown + resumed <= Self.inFlightWindow, "unknown \(unknown), resent after back-off \(resumed)")
        #expect(never <= unknown + failed, "\(never) phones never got a start; unknown \(unknown), failed \(failed)")
    }

    @Test func answersSlowerThanACheckpointIntervalNeverPutMoreThanTheWindowInFlight() throws {
        // 1 connection × 10 streams and 1.5 s per answer: about 7 answers a second, and a gate of
        // 10 + 16 (the wire and the smallest batch). Waiting for room takes longer than the 1 s
        // between checkpoints; the checkpoint must not open the gate.
        let killed = try KilledFanout(event: startEvent(groups: [("region:0", 3, "one")]), killAt: 20, phoneCount: 300,
                                      latency: .milliseconds(1_500), pool: ["--connections", "1", "--streams", "10"])
        let run = killed.scenario.fanout(killed.eventPath, ["--connections", "4", "--streams", "200"])
        let report = try JSONParser.parse(run.out)
        let unknown = Int(report["unknown"]?.int64Value ?? -1)
        let (starts, never, _) = killed.starts()
        print("slow answers, kill at \(killed.acceptedAtKill) accepted: unknown \(unknown), never started \(never)")
        #expect(unknown <= 26, "\(unknown) starts were in flight at the kill")
        #expect(starts.values.allSatisfy { $0 == 1 }, "a phone got two starts")
        #expect(never <= unknown)
    }

    @Test func aHigherSerialTakesOverTheKilledSerialsPendingStartsWithItsOwnContent() throws {
        let killed = try KilledFanout(event: startEvent(groups: [("region:0", 3, "one")]), killAt: 3_000)
        let firstRun = killed.starts().perPhone
        let newer = killed.scenario.event("serial2.json", startEvent(serial: 2, groups: [("region:0", 3, "two")]))
        let run = killed.scenario.fanout(newer, Self.pool)
        let report = try JSONParser.parse(run.out)
        let unknown = Int(report["unknown"]?.int64Value ?? -1)
        #expect(run.code == (unknown > 0 ? .refused : .success), "\(run)")  // serial 1's starts in flight at the kill
        let later = killed.scenario.accepted().dropFirst(killed.acceptedAtKill).filter { $0.path.hasPrefix("/3/device/") }
        let (starts, never, _) = killed.starts()
        print("supersede, kill at \(killed.acceptedAtKill) accepted: serial 2 sent \(later.count), unknown \(unknown), never started \(never)")
        #expect(!later.isEmpty)
        #expect(later.allSatisfy { $0.body["aps"]?["content-state"]?["text"]?.stringValue == "two" })
        #expect(later.allSatisfy { (firstRun[String($0.path.dropFirst("/3/device/".count))] ?? 0) == 0 })
        #expect(starts.values.allSatisfy { $0 == 1 }, "a phone got two starts")
        #expect(never <= unknown, "\(never) phones never got a start, but only \(unknown) were reported unknown")
        #expect(later.count + firstRun.count + unknown >= killed.phones.count)
        let older = killed.scenario.fanout(killed.eventPath, Self.pool)
        #expect(older.code == .dataError, "\(older)")
        #expect(older.err.contains("older than serial 2"), "\(older)")
        #expect(killed.scenario.accepted().count == killed.acceptedAtKill + later.count)
    }
}

/// A scenario of `FanoutResumeTests.phoneCount` phones whose event a `sokuho fanout` child process
/// (the built binary) started and a SIGKILL stopped once the simulator had accepted `killAt`
/// pushes; the store is checked afterwards.
final class KilledFanout {
    let scenario: FanoutScenario
    let eventPath: String
    let phones: [String]
    /// Pushes the simulator accepted before the rerun (the killed run's, its last answers included).
    private(set) var acceptedAtKill = 0

    /// `pause`: how long the run goes on after `killAt` accepted pushes before the kill.
    /// Android phones (FCM tokens) registered beside the iOS ones, in the same region.
    let androidPhones: [String]

    /// `pause`: how long the run goes on after `killAt` accepted pushes before the kill.
    /// `androidCount`: Android phones beside the iOS ones; the run then has the simulator's FCM
    /// side (`scenario.android`) too, and `pool` should hold its FCM options.
    /// `before`: an event of the same key run to its end first (a start, before the killed update).
    /// `prepare`: more for the store (activity update tokens) before the killed run.
    init(event: String, killAt: Int, phoneCount: Int = FanoutResumeTests.phoneCount, androidCount: Int = 0, latency: Duration = .milliseconds(20),
         pool: [String] = FanoutResumeTests.pool, pause: Duration = .zero, before: String? = nil,
         simulator configure: @escaping (inout SimulatorConfiguration) -> Void = { _ in },
         prepare: (FanoutScenario) throws -> Void = { _ in }) throws {
        scenario = try FanoutScenario {
            $0.latency = latency
            configure(&$0)
        }
        phones = (0..<phoneCount).map { FanoutScenario.token($0) }
        androidPhones = (0..<androidCount).map { FanoutScenario.fcmToken($0) }
        try scenario.register(phones.enumerated().map { n, token in
            FanoutScenario.Phone(id: "install-\(n)", token: token, topics: [("region:0", 0)], broadcast: n % 2 == 0)
        } + androidPhones.enumerated().map { n, token in
            FanoutScenario.Phone(id: "android-\(n)", token: token, kind: .fcm, topics: [("region:0", 0)])
        })
        eventPath = scenario.event("event.json", event)
        try #require(access(SimulatorProcessTests.binary, X_OK) == 0, "build the binary first: swift build")
        let android = androidCount > 0 ? scenario.android : []
        if let before {
            let run = scenario.fanout(scenario.event("before.json", before), android + pool)
            try #require(run.code == .success, "the event before: \(run)")
        }
        try prepare(scenario)
        let child = ChildProcess(SimulatorProcessTests.binary, ["fanout", eventPath, "--json"] + scenario.connection + android + pool)
        let lines = LineCounter(path: scenario.log)
        let giveUp = MonotonicInstant.now() + .seconds(30)
        while lines.count() < killAt && MonotonicInstant.now() < giveUp { usleep(2_000) }
        if pause > .zero { usleep(UInt32(pause.components.seconds * 1_000_000 + pause.components.attoseconds / 1_000_000_000_000)) }
        kill(child.pid, SIGKILL)
        let status = child.wait()
        try #require(status == 128 + SIGKILL, "the fan-out ended before the kill (exit \(status)): \(child.stderr)")
        // Answers the simulator had queued go out (and are logged) within its latency, or never.
        usleep(200_000)
        acceptedAtKill = lines.count()
        let check = sokuho(["store", "check", "--store", scenario.store])
        try #require(check.code == .success, "store check after the kill: \(check)")
    }

    /// Pushes the simulator accepted after the kill.
    func acceptedSinceKill() -> Int { LineCounter(path: scenario.log).count() - acceptedAtKill }

    /// Starts per phone token (hex) over all runs so far, how many phones got none, and how many more than one.
    func starts() -> (perPhone: [String: Int], never: Int, twice: Int) {
        let perPhone = scenario.devicePushes().mapValues { pushes in pushes.filter { $0.body["aps"]?["event"]?.stringValue == "start" }.count }
        return (perPhone, phones.filter { (perPhone[$0] ?? 0) == 0 }.count, perPhone.values.filter { $0 > 1 }.count)
    }

    /// The same for the Android phones: FCM start messages per registration token.
    func androidStarts() -> (perPhone: [String: Int], never: Int, twice: Int) {
        let perPhone = scenario.fcmMessages().mapValues { messages in messages.filter { $0["data"]?["kind"]?.stringValue == "start" }.count }
        return (perPhone, androidPhones.filter { (perPhone[$0] ?? 0) == 0 }.count, perPhone.values.filter { $0 > 1 }.count)
    }
}

/// Counts the lines of a growing file, reading only what was appended since the last call.
final class LineCounter {
    private let path: String
    private var offset = 0
    private var lines = 0

    init(path: String) { self.path = path }

    func count() -> Int {
        guard let file = fopen(path, "r") else { return lines }
        defer { fclose(file) }
        fseek(file, offset, SEEK_SET)
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let n = chunk.withUnsafeMutableBufferPointer { fread($0.baseAddress, 1, $0.count, file) }
            if n == 0 { return lines }
            // Only whole lines: a partial last line is counted once its newline arrives.
            guard let last = chunk[0..<n].lastIndex(of: 10) else { return lines }
            lines += chunk[0...last].count { $0 == 10 }
            offset += last + 1
            fseek(file, offset, SEEK_SET)
        }
    }
}

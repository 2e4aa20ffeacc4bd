#if canImport(Glibc)
import Glibc
#endif
import APNs
import Crypto
import Daemon
import DaemonConfiguration
import Runtime
import IO
import JSONCore
import Simulator
import TokenStore
import Vocabulary

/// `sokuho bench serve`: the daemon's promise for the first warning after a quiet week — an event
/// submitted over the API reaches the wire within milliseconds although its warm pool sat idle
/// for longer than the keep-alive. Runs `Service` (what `sokuho serve` runs) and the simulator in
/// this process; before each event it waits `--idle` seconds, then submits a start over HTTP and
/// times from the request's first byte to the simulator's first accepted push of it.
enum BenchServeCommand {
    static let spec = CommandSpec(
        "serve",
        summary: "time from an event submitted to the daemon's API to its first push, after the warm pool sat idle",
        options: [
            OptionSpec("--phones", value: "N", help: "installations in the store, all in the event's region (default 1000)"),
            OptionSpec("--events", value: "N", help: "start events to submit, one after another (default 20)"),
            OptionSpec("--keepalive", value: "SECONDS", help: "the daemon's keep-alive PING interval (default 3)"),
            OptionSpec("--idle", value: "SECONDS", help: "how long the pool sits idle before each event (default: keep-alive + 0.5)"),
            OptionSpec("--connections", value: "N", help: "warm connections (default 2)"),
            OptionSpec("--channel", value: "none|auto", help: "auto: each event creates its broadcast channel first, on the app's kept channel-host connection (default none)"),
            OptionSpec("--android", help: "30% of the phones on Android, through the app's warm FCM pool: also times the first FCM message"),
            OptionSpec("--json", help: "print {\"events\":…,\"idleSeconds\":…,\"firstPushMs\":{\"p50\",\"p99\",\"max\"},\"eventMs\":{\"p50\",\"p99\"},\"reconnects\":…} (with --android also \"firstAndroidMs\")"),
        ],
        details: """
        The events name no broadcast channel, so the first push is a device push on a warm
        connection; with --channel auto each event first creates its channel on the channel host
        (on the app's kept connection there, opened by the credential check at start), so the
        first push pays one channel-host round trip and no handshake. With --android the app has
        an android member on the simulator's FCM side (one warm connection, no quota) and 30% of
        the phones are Android: the first FCM message of each event is timed the same way (a
        mixed event's Android starts share the scan with its iOS starts).
        Exit status: 0 when every event reached every phone on the warm connections; 1 otherwise.
        """,
        run: run)

    static let bundle = DemoCommand.app

    static func run(_ invocation: Invocation) throws(CLIError) -> ExitCode {
        let phones = try invocation.int("--phones", in: 1...1_000_000) ?? 1000
        let events = try invocation.int("--events", in: 1...10_000) ?? 20
        let keepalive = try invocation.int("--keepalive", in: 1...3600) ?? 3
        let idleText = invocation.string("--idle")
        guard let idle = idleText.map({ Double($0) }) ?? Double(keepalive) + 0.5, idle >= 0, idle <= 3600 else {
            throw .usage("--idle must be seconds between 0 and 3600, not '\(idleText ?? "")'")
        }
        let connections = try invocation.int("--connections", in: 1...64) ?? 2
        let android = invocation.flag("--android")
        let channel: String
        switch invocation.string("--channel") ?? "none" {
        case "none": channel = "null"
        case "auto": channel = "\"auto\""
        case let other: throw .usage("--channel must be none or auto, not '\(other)'")
        }
        let console = invocation.console
        let directory = TemporaryDirectory.make(prefix: "sokuho-bench-serve")
        defer { DemoCommand.removeTree(directory) }

        let (certificates, simulator) = try DemoCommand.startSimulator(directory: directory)
        defer { simulator.stop() }
        // The store is filled, then closed: the daemon opens it as `sokuho serve` would.
        do {
            let store = try TokenStore(directory: directory + "/store")
            defer { store.close() }
            _ = try DemoCommand.populate(store, installations: phones, regions: 1, android: android)
        } catch let error as CLIError { throw error } catch { throw CLIError(.software, "the store: \(error)") }

        let admin = Base64URL.encode(RandomSource.shared.bytes(24))
        let tokenFile = directory + "/admin.token"
        guard let file = fopen(tokenFile, "w") else { throw CLIError(.software, "\(tokenFile): \(String(cString: strerror(errno)))") }
        fputs(admin, file)
        fclose(file)
        chmod(tokenFile, 0o600)
        chmod(certificates.providerKey, 0o600)
        var configuration = ServeConfiguration()
        var app = ServeConfiguration.App(bundleID: try SendCommand.option("--topic") { () throws(ValidationError) in try BundleID(bundle) },
                                         teamID: SimulatorCertificates.teamID, keyID: SimulatorCertificates.keyID,
                                         keyFile: certificates.providerKey, environment: .production, connections: connections, streams: 1000)
        app.host = Endpoint(host: "127.0.0.1", port: simulator.port)
        app.manageHost = Endpoint(host: "127.0.0.1", port: simulator.managePort)
        app.caFile = certificates.ca
        if android {
            chmod(simulator.fcmServiceAccountFile, 0o600)
            app.android = AndroidApp(package: bundle, serviceAccountFile: simulator.fcmServiceAccountFile,
                                     fcmHost: Endpoint(host: "127.0.0.1", port: simulator.port), caFile: certificates.ca, connections: 1)
        }
        configuration.apps = [app]
        configuration.listen = [Endpoint(host: "127.0.0.1", port: 0)]
        configuration.storePath = directory + "/store"
        configuration.adminTokenFile = tokenFile
        configuration.keepalive = .seconds(keepalive)
        configuration.rateLimit = nil
        configuration.startLimit = nil
        configuration.statusPage = false

        let daemon: Daemon
        do { daemon = try Daemon(configuration: configuration) } catch { throw CLIError(.software, "the daemon did not start: \(error)") }
        defer { daemon.stop() }
        daemon.start()
        let port = daemon.ports[0]
        let auth = [("Authorization", "Bearer " + admin), ("Content-Type", "application/json")]
        // Ready: every connection up (and the credential check's connection made), like /readyz.
        let ready = MonotonicInstant.now() + .seconds(20)
        while MonotonicInstant.now() < ready {
            if let answer = try? LoopbackHTTP.request(port: port, method: "GET", path: "/readyz"), answer.status == 200,
               simulator.counters.connections >= connections + 1 + (android ? 1 : 0) { break }
            usleep(10_000)
        }
        // The Android side also makes short-lived connections at the start (its access-token
        // exchanges for the pool and the credential check): count from when they have settled.
        if android {
            var settled = simulator.counters.connections
            var since = MonotonicInstant.now()
            while MonotonicInstant.now() - since < .milliseconds(500), MonotonicInstant.now() < ready + .seconds(5) {
                usleep(20_000)
                let now = simulator.counters.connections
                if now != settled { (settled, since) = (now, MonotonicInstant.now()) }
            }
        }
        let connectionsAtStart = simulator.counters.connections
        if !invocation.flag("--json") {
            console.print("sokuho bench serve: \(phones) phones, \(connections) warm connections, keep-alive \(keepalive) s; "
                          + "\(events) start events, each after \(idle) s idle")
        }

        var firstPush: [Double] = []
        var firstAndroid: [Double] = []
        var wholeEvent: [Double] = []
        var complete = true
        for index in 0..<events {
            usleep(useconds_t(idle * 1_000_000))
            let before = simulator.acceptedCount
            let androidBefore = simulator.counters.fcmAccepted
            let body = Array(event(key: "bench-serve-\(WallClock.seconds())-\(index)", channel: channel).utf8)
            let started = MonotonicInstant.now()
            let answer: (status: Int, body: [UInt8])
            do { answer = try LoopbackHTTP.request(port: port, method: "POST", path: "/v1/events", headers: auth, body: body) } catch {
                throw CLIError(.software, "POST /v1/events: \(error)")
            }
            guard answer.status == 202 else {
                throw CLIError(.software, "POST /v1/events answered \(answer.status): \(String(decoding: answer.body, as: UTF8.self))")
            }
            // Spin on the simulator's counts: each moves when the first push (message) of the event
            // arrived on its side.
            let limit = started + .seconds(30)
            var first: MonotonicInstant?
            var firstFCM: MonotonicInstant?
            while first == nil || (android && firstFCM == nil), MonotonicInstant.now() < limit {
                let counters = simulator.counters
                if first == nil && counters.accepted != before { first = MonotonicInstant.now() }
                if firstFCM == nil && counters.fcmAccepted != androidBefore { firstFCM = MonotonicInstant.now() }
                usleep(50)
            }
            func reached() -> Int { let counters = simulator.counters; return counters.accepted - before + counters.fcmAccepted - androidBefore }
            while reached() < phones, MonotonicInstant.now() < limit { usleep(1_000) }
            let done = MonotonicInstant.now()
            if reached() < phones { complete = false }
            firstPush.append(((first ?? done) - started).seconds * 1000)
            if android { firstAndroid.append(((firstFCM ?? done) - started).seconds * 1000) }
            wholeEvent.append((done - started).seconds * 1000)
            if !invocation.flag("--json") {
                console.print("event \(index + 1): first push \(format(firstPush.last!)) ms"
                              + (android ? ", first Android message \(format(firstAndroid.last!)) ms" : "")
                              + ", all \(reached()) in \(format(wholeEvent.last!)) ms")
            }
        }
        // Any connection beyond the start's would mean the idle pool lost one and an event paid for it.
        let reconnects = simulator.counters.connections - connectionsAtStart
        let sorted = firstPush.sorted(), sortedEvent = wholeEvent.sorted()
        func percentile(_ values: [Double], _ p: Double) -> Double { values[min(values.count - 1, Int((Double(values.count) * p).rounded(.up)) - 1)] }
        if invocation.flag("--json") {
            var writer = JSONWriter()
            writer.beginObject()
            writer.key("events"); writer.int(events)
            writer.key("phones"); writer.int(phones)
            writer.key("keepaliveSeconds"); writer.int(keepalive)
            writer.key("idleSeconds"); writer.double(idle)
            writer.key("firstPushMs"); writer.beginObject()
            writer.key("p50"); writer.double(percentile(sorted, 0.5))
            writer.key("p99"); writer.double(percentile(sorted, 0.99))
            writer.key("max"); writer.double(sorted.last ?? 0)
            writer.endObject()
            if android {
                let sortedAndroid = firstAndroid.sorted()
                writer.key("firstAndroidMs"); writer.beginObject()
                writer.key("p50"); writer.double(percentile(sortedAndroid, 0.5))
                writer.key("p99"); writer.double(percentile(sortedAndroid, 0.99))
                writer.key("max"); writer.double(sortedAndroid.last ?? 0)
                writer.endObject()
            }
            writer.key("eventMs"); writer.beginObject()
            writer.key("p50"); writer.double(percentile(sortedEvent, 0.5))
            writer.key("p99"); writer.double(percentile(sortedEvent, 0.99))
            writer.endObject()
            writer.key("reconnects"); writer.int(reconnects)
            writer.key("complete"); writer.bool(complete)
            writer.endObject()
            console.print(writer.string)
        } else {
            console.print("first push    p50 \(format(percentile(sorted, 0.5))) ms · p99 \(format(percentile(sorted, 0.99))) ms · max \(format(sorted.last ?? 0)) ms")
            if android {
                let sortedAndroid = firstAndroid.sorted()
                console.print("first Android p50 \(format(percentile(sortedAndroid, 0.5))) ms · p99 \(format(percentile(sortedAndroid, 0.99))) ms · max \(format(sortedAndroid.last ?? 0)) ms")
            }
            console.print("whole event   p50 \(format(percentile(sortedEvent, 0.5))) ms · p99 \(format(percentile(sortedEvent, 0.99))) ms")
            console.print("reconnects    \(reconnects) (connections opened after the start)")
        }
        return complete && reconnects == 0 ? .success : .refused
    }

    /// A start for every phone of region 0, its group's `channel` as given (JSON: null or "auto");
    /// phones without Live Activities get the fallback alert, so every installation gets exactly one push.
    static func event(key: String, channel: String = "null") -> String {
        """
        {"app":"\(bundle)","environment":"production","key":"\(key)","serial":1,"kind":"start","deadlineSeconds":60,
         "attributesType":"EewLiveActivityAttributes","attributes":{"eventId":"\(key)"},
         "alert":{"title":"緊急地震速報（警報）","body":"強い揺れに警戒してください","sound":"default"},
         "fallbackAlert":{"title":"緊急地震速報","body":"強い揺れに警戒してください"},
         "groups":[{"topic":"region:0","level":5,"channel":\(channel),"contentState":{"region":0}}]}
        """
    }

    static func format(_ milliseconds: Double) -> String {
        let tenths = Int((milliseconds * 10).rounded())
        return "\(tenths / 10).\(tenths % 10)"
    }
}

#if canImport(Glibc)
import Glibc
#endif
import APNs
import Crypto
import Fanout
import HTTP2
import IO
import JSONCore
import Sender
import Simulator
import TokenStore
import Vocabulary

/// `sokuho demo`: the product's main job end to end with no Apple account — the simulator on
/// loopback, a temporary store of phones, and an earthquake warning from start to end.
enum DemoCommand {
    static let spec = CommandSpec(
        "demo",
        summary: "run an earthquake-warning scenario against the built-in APNs simulator (no Apple account needed)",
        options: [
            OptionSpec("--installations", value: "N", help: "phones in the temporary store (default 25000)"),
            OptionSpec("--regions", value: "N", help: "regions they live in (default 200)"),
            OptionSpec("--svg", value: "FILE", help: "where to draw the start's chart (default sokuho-demo.svg)"),
            OptionSpec("--json", help: "print one JSON report per step"),
        ],
        details: """
        Steps: (1) a warning starts a Live Activity in the affected regions, with a per-region
        intensity; (2) a second serial widens the area (new regions get starts, the others an
        update); (3) an update through the broadcast channels (iOS 18) and the update tokens iOS 17
        phones reported; (4) the final end with a dismissal date. Each report is printed next to
        what the simulator accepted. The store and certificates are temporary and removed at the end.
        """,
        run: run)

    static let app = "com.example.eew"

    static func run(_ invocation: Invocation) throws(CLIError) -> ExitCode {
        let installations = try invocation.int("--installations", in: 10...2_000_000) ?? 25_000
        let regions = try invocation.int("--regions", in: 2...10_000) ?? 200
        let console = invocation.console
        let json = invocation.flag("--json")
        let directory = TemporaryDirectory.make(prefix: "sokuho-demo")
        defer { removeTree(directory) }

        let (certificates, simulator) = try startSimulator(directory: directory)
        defer { simulator.stop() }
        let store: TokenStore
        do { store = try TokenStore(directory: directory + "/store") } catch { throw StoreAccess.cliError(error) }
        defer { store.close() }

        let phones = try populate(store, installations: installations, regions: regions)
        if !json {
            console.print("sokuho demo: simulator on 127.0.0.1:\(simulator.port); \(installations) phones in \(regions) regions (\(phones.broadcastCapable) on iOS 18, "
                          + "\(phones.iOS17.count) on iOS 17, \(phones.android) on Android, \(phones.deviceOnly) without Live Activities)")
        }
        let options = try fanoutOptions(simulator: simulator, certificates: certificates)
        let key = "eew-demo-\(WallClock.seconds())"
        let affected = max(1, regions / 10)
        let steps: [(title: String, event: String)] = [
            ("1. warning: start in \(affected) regions", event(key: key, serial: 1, kind: "start", regions: 0..<affected, intensity: 5)),
            ("2. serial 2 widens the area to \(2 * affected) regions", event(key: key, serial: 2, kind: "update", regions: 0..<(2 * affected), intensity: 6)),
            ("3. update through channels and update tokens", event(key: key, serial: 3, kind: "update", regions: 0..<(2 * affected), intensity: 6)),
            ("4. final end, dismissed in 15 minutes", event(key: key, serial: 4, kind: "end", regions: 0..<(2 * affected), intensity: 6)),
        ]
        var failed = false
        for (index, step) in steps.enumerated() {
            if index == 2 {
                // iOS 17 phones report the update token of the activity the start created; here
                // the demo plays those phones.
                try registerActivityTokens(store, key: key, phones: phones)
            }
            let before = simulator.counters
            let event: FanoutEvent
            do { event = try FanoutEvent(json: Array(step.event.utf8)) } catch { throw CLIError(.software, "demo event: \(error)") }
            let result: FanoutResult
            do { result = try Fanout.run(event, store: store, options: options) } catch { throw FanoutCommand.cliError(error) }
            let after = simulator.counters
            let accepted = after.accepted - before.accepted
            let fcm = after.fcmAccepted - before.fcmAccepted
            if json {
                console.print(String(decoding: result.report.json, as: UTF8.self))
            } else {
                console.print("\n" + step.title)
                console.print(result.report.text)
                console.print("simulator     accepted \(accepted) APNs pushes and \(fcm) FCM messages, refused \(after.rejectedTotal - before.rejectedTotal), "
                              + "channel requests \(after.channelRequests - before.channelRequests)")
            }
            if accepted + fcm != result.report.delivered || fcm != result.report.android.delivered { failed = true }
            if index == 0 {
                let path = invocation.string("--svg") ?? "sokuho-demo.svg"
                try DeliveryChart(title: "sokuho demo: earthquake warning start", subtitle: "\(result.report.targets) targets · \(result.report.delivered) delivered",
                                  seriesLabel: "delivered", overTime: result.delivered, latency: result.latency).write(to: path)
                if !json { console.print("chart         \(path)") }
            }
        }
        if failed { throw CLIError(.software, "the simulator's accepted count differs from the reports' delivered count") }
        return .success
    }

    /// The simulator in this process, for the demo's app only, with certificates and the test key
    /// in `directory/certs` (the demo and `bench serve`).
    static func startSimulator(directory: String) throws(CLIError) -> (SimulatorCertificates, APNsSimulator) {
        do {
            let certificates = try SimulatorCertificates.prepare(directory: directory + "/certs")
            var configuration = SimulatorConfiguration()
            configuration.trustedKeys = [try certificates.trustedTestKey()]
            configuration.bundles = [app]
            return (certificates, try APNsSimulator(configuration: configuration, certificates: certificates))
        } catch {
            throw CLIError(.software, "the simulator did not start: \(error)")
        }
    }

    /// What the demo's store holds.
    struct Phones {
        var broadcastCapable = 0
        var deviceOnly = 0
        var android = 0
        /// Push-to-start tokens of iOS 17 phones, by region (their activities report update tokens).
        var iOS17: [(installation: String, region: Int)] = []
    }

    /// Fills the store: realistic random tokens, minimum levels 0–4; 40% of phones on iOS 18, 20%
    /// on iOS 17, 30% on Android (FCM), 10% with Live Activities off (device token only, for the
    /// fallback alert). Without `android` (`bench serve`, whose daemon has no Android side) those
    /// 30% are iOS 17 phones instead.
    static func populate(_ store: TokenStore, installations: Int, regions: Int, android: Bool = true) throws(CLIError) -> Phones {
        var random = SplitMix64(seed: 2026)
        var phones = Phones()
        var operations: [WriteOperation] = []
        let now = WallClock.milliseconds()
        for index in 0..<installations {
            let id = TokensGenerateCommand.uuid(&random)
            let region = Int(random.next() % UInt64(regions))
            let topics = [TopicSubscription(name: "region:\(region)", minLevel: UInt8(random.next() % 5))]
            var token: [UInt8] = []
            for _ in 0..<4 { withUnsafeBytes(of: random.next()) { token.append(contentsOf: $0) } }
            let roll = random.next() % 10
            if android, (1...3).contains(roll) {
                phones.android += 1
                operations.append(.register(TokenRegistration(installationID: id, app: app, environment: .production, kind: .fcm,
                                                              token: TokensGenerateCommand.fcmToken(&random), topics: topics), at: now))
            } else if roll == 0 {
                phones.deviceOnly += 1
                operations.append(.register(TokenRegistration(installationID: id, app: app, environment: .production, kind: .device,
                                                              token: token, topics: topics), at: now))
            } else {
                let broadcast = roll >= 6
                if broadcast { phones.broadcastCapable += 1 } else { phones.iOS17.append((id, region)) }
                operations.append(.register(TokenRegistration(installationID: id, app: app, environment: .production, kind: .pushToStart,
                                                              token: token, topics: topics, broadcast: broadcast), at: now))
            }
            if operations.count == 10_000 || index == installations - 1 {
                do { try store.write(operations) } catch { throw StoreAccess.cliError(error) }
                operations.removeAll(keepingCapacity: true)
            }
        }
        return phones
    }

    /// Update tokens for the iOS 17 phones that got a start (those in the affected regions).
    static func registerActivityTokens(_ store: TokenStore, key: String, phones: Phones) throws(CLIError) {
        var random = SplitMix64(seed: 17)
        let now = WallClock.milliseconds()
        let operations = phones.iOS17.prefix(2_000).map { phone -> WriteOperation in
            var token: [UInt8] = []
            for _ in 0..<4 { withUnsafeBytes(of: random.next()) { token.append(contentsOf: $0) } }
            return .putActivity(ActivityRecord(id: "activity-" + phone.installation, app: app, environment: .production,
                                               updateToken: token, eventKey: key, startedAt: now, topic: "region:\(phone.region)"))
        }
        do { try store.write(operations) } catch { throw StoreAccess.cliError(error) }
    }

    /// The fan-out's options for the in-process simulator and its test key.
    static func fanoutOptions(simulator: APNsSimulator, certificates: SimulatorCertificates) throws(CLIError) -> FanoutOptions {
        do {
            let tls = try TLSConfiguration.client(caFile: certificates.ca)
            var pool = PoolConfiguration(host: "127.0.0.1", port: simulator.port, tls: tls)
            pool.providerTokens = ProviderTokenSource(signer: try ProviderTokenSigner(key: try SigningKey(contentsOf: certificates.providerKey),
                                                                                      keyID: SimulatorCertificates.keyID, teamID: SimulatorCertificates.teamID))
            var options = FanoutOptions(pool: pool, manage: ProviderEndpoint(host: "127.0.0.1", port: simulator.managePort, tls: tls))
            // The Android phones through the simulator's FCM side (same port), its quota off.
            let tokens = try FCMConnection.accessTokens(simulator.fcmServiceAccount, tls: tls, timeout: .seconds(30))
            options.android = FCMLane(pool: .fcm(host: "127.0.0.1", port: simulator.port, tls: tls, tokens: tokens))
            return options
        } catch let error as CLIError {
            throw error
        } catch {
            throw CLIError(.software, "the simulator's credentials: \(error)")
        }
    }

    /// One serial of the demo's warning as a backend would submit it.
    static func event(key: String, serial: Int, kind: String, regions: Range<Int>, intensity: Int) -> String {
        var writer = JSONWriter()
        writer.beginObject()
        writer.key("app"); writer.string(app)
        writer.key("environment"); writer.string("production")
        writer.key("key"); writer.string(key)
        writer.key("serial"); writer.int(serial)
        writer.key("kind"); writer.string(kind)
        writer.key("deadlineSeconds"); writer.int(60)
        if kind == "start" {
            writer.key("attributesType"); writer.string("EewLiveActivityAttributes")
            writer.key("attributes"); writer.raw(Array(#"{"eventId":"\#(key)"}"#.utf8))
            writer.key("alert"); writer.raw(Array(#"{"title":"緊急地震速報（警報）","body":"強い揺れに警戒してください","sound":"default"}"#.utf8))
            writer.key("inputPushToken"); writer.bool(true)
            writer.key("fallbackAlert"); writer.raw(Array(#"{"title":"緊急地震速報","body":"強い揺れに警戒してください"}"#.utf8))
        }
        writer.key("groups"); writer.beginArray()
        for region in regions {
            // Intensity falls off with distance from the epicentre (region 0).
            let level = max(1, intensity - region * 4 / max(1, regions.count))
            writer.beginObject()
            writer.key("topic"); writer.string("region:\(region)")
            writer.key("level"); writer.int(level)
            writer.key("channel"); writer.string("auto")
            let final = kind == "end"
            writer.key("contentState")
            writer.raw(Array(#"{"serialNo":\#(serial),"region":\#(region),"forecastIntensity":\#(level),"isFinal":\#(final)}"#.utf8))
            if final { writer.key("dismissalDate"); writer.int(WallClock.seconds() + 900) }
            writer.endObject()
        }
        writer.endArray()
        writer.endObject()
        return writer.string
    }

    /// `rm -rf` of the demo's temporary directory (only ever a directory it created).
    static func removeTree(_ path: String) {
        guard let names = DirectoryListing.names(path) else { unlink(path); return }
        for name in names {
            let child = path + "/" + name
            var info = stat()
            if lstat(child, &info) == 0 && (info.st_mode & S_IFMT) == S_IFDIR { removeTree(child) } else { unlink(child) }
        }
        rmdir(path)
    }
}

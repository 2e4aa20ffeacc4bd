import APNs
import Crypto
import FCM
import Fanout
import HTTP2
import IO
import JSONCore
import Sender
import TokenStore

/// `sokuho fanout EVENT.json`: one Live Activity event (start, update, end) to every phone of the
/// token store it concerns. The event's format is in the README ("Events").
enum FanoutCommand {
    static let spec = CommandSpec(
        "fanout",
        summary: "send a Live Activity event (start, update, end) to every phone of the token store it concerns",
        usage: "EVENT.json --store DIR [credentials] [options]",
        options: [StoreAccess.option] + APNsConnectionOptions.credentials + [topicOption] + endpointOptions + [
            OptionSpec("--connections", value: "N", help: "HTTP/2 connections to the push host (default 4)"),
            OptionSpec("--streams", value: "N", help: "cap on concurrent streams per connection (default 1000)"),
            OptionSpec("--threads", value: "N", help: "event-loop threads (default: one per core, at most the connections)"),
            OptionSpec("--start-limit", value: "N", help: "push-to-start budget: skip (and count) a phone that got N starts from other events within --start-window (default 8; 0: no limit)"),
            OptionSpec("--start-window", value: "SECONDS", help: "the window of the start budget (default 3600)"),
            OptionSpec("--keep-channels", help: "end: keep the event's auto channels (deleted by default)"),
            OptionSpec("--json", help: "print the report as one JSON object"),
            OptionSpec("--svg", value: "FILE", help: "draw delivered over time and the latency distribution into FILE"),
            OptionSpec("--log", value: "FILE", help: "append one JSON line per push: token's last 8 characters, group, apns-id, apns-unique-id, status, reason, outcome"),
        ] + androidOptions,
        positionals: [PositionalSpec("EVENT.json", help: "the event (a JSON object; see \(InstalledDocumentation.section("Events")))")],
        details: """
        Running the same event (key, serial, body) again prints "already sent" and the earlier
        report; an interrupted one (a crash, kill -9) resumes where its checkpoints say. A higher
        serial of the same key takes over the lower one's pending starts.

        exit codes: 0 every target delivered or pruned (or already sent) · 1 some failed, were
                    unknown or expired, or a group's pushes were more than one provider
                    carries (that provider's phones not sent to, the others sent as usual; the
                    report's warnings say which) · 64 usage, or a --topic other than the
                    event's app · 65 invalid event (no provider could carry a group), or its key and
                    serial were sent with another body · 66 event file or store missing ·
                    69 APNs unreachable or the pool stopped · 74 store write failed ·
                    78 circuit breaker: a wrong environment or topic (nothing pruned)
        """,
        run: run)

    /// The Android side: without `--service-account` the event reaches iOS phones only and its
    /// report counts the Android phones it left out.
    static let androidOptions: [OptionSpec] = [
        OptionSpec("--service-account", value: "FILE", help: "Android: the Firebase service account's JSON key (Google's download); the event's Android phones then get FCM messages"),
        OptionSpec("--fcm-host", value: "HOST:PORT", help: "Android: FCM host instead of fcm.googleapis.com:443 (e.g. the simulator's push port)"),
        OptionSpec("--fcm-connections", value: "N", help: "Android: HTTP/2 connections to FCM (default 4)"),
        OptionSpec("--fcm-messages-per-minute", value: "N", help: "Android: at most N FCM messages a minute, retries included (default 600000, Google's quota per project)"),
    ]

    /// The endpoint options of `send`, but not `--environment`: an event names its environment
    /// (no silent sandbox default on this path).
    static let endpointOptions = APNsConnectionOptions.endpoint.filter { $0.name != "--environment" }

    /// `--topic` as every command that talks to APNs takes it, but the event names its app: the
    /// option may restate it and is refused when it contradicts it (64), so nothing is silently
    /// ignored. Without `SOKUHO_TOPIC`: a variable exported for `send` to one app must not stop the
    /// fan-out of another app's event (the fan-out never read it), only a `--topic` given here.
    static let topicOption = OptionSpec(APNsConnectionOptions.topic.name, value: APNsConnectionOptions.topic.value,
                                        help: "the event's app (optional: the event names it; another bundle ID is refused)")

    /// Refuses a `--topic` that is not the event's app (64), naming both.
    static func checkTopic(_ invocation: Invocation, event: FanoutEvent, path: String) throws(CLIError) {
        guard let topic = invocation.string("--topic"), topic != event.app.text else { return }
        throw .usage("--topic \(topic) contradicts the event's app \(event.app.text) (\(path)); leave --topic out or give the event's app")
    }

    static func run(_ invocation: Invocation) throws(CLIError) -> ExitCode {
        guard let path = invocation.positional("EVENT.json") else { throw .usage("missing EVENT.json; see 'sokuho fanout --help'") }
        let bytes = try InputFile.read(path, option: "EVENT.json")
        let event: FanoutEvent
        do { event = try FanoutEvent(json: bytes) } catch { throw .data("\(path): \(error)") }
        try checkTopic(invocation, event: event, path: path)
        try checkAndroidOptions(invocation)
        let store = try StoreAccess.open(invocation, readOnly: false)
        defer { store.close() }
        var options = try fanoutOptions(invocation, environment: event.environment)
        let console = invocation.console
        if console.isTerminal {
            options.progress = { delivered, inFlight in console.progress("\r\u{1B}[Kfanout: \(delivered) delivered, \(inFlight) in flight") }
        }
        let result: FanoutResult
        do { result = try Fanout.run(event, store: store, options: options) } catch { throw cliError(error) }
        if console.isTerminal { console.progress("\r\u{1B}[K") }
        return try finish(result, invocation: invocation)
    }

    /// Pool and endpoints from the command line, for `environment`'s hosts unless overridden.
    static func fanoutOptions(_ invocation: Invocation, environment: Environment) throws(CLIError) -> FanoutOptions {
        let tls = try APNsConnectionOptions.tls(invocation)
        var push: (host: String, port: Int) = (environment.devicePush.host, environment.devicePush.port)
        if let text = invocation.string("--host") { push = try APNsConnectionOptions.hostPort(text, option: "--host") }
        var manage: (host: String, port: Int) = (environment.channelManagement.host, environment.channelManagement.port)
        if let text = invocation.string("--manage-host") { manage = try APNsConnectionOptions.hostPort(text, option: "--manage-host") }
        var pool = PoolConfiguration(host: push.host, port: push.port, tls: tls)
        pool.serverName = try APNsConnectionOptions.serverName(invocation)
        pool.providerTokens = try APNsConnectionOptions.providerTokens(invocation)
        pool.connections = try invocation.int("--connections", in: 1...256) ?? 4
        pool.streamsPerConnection = try invocation.int("--streams", in: 1...100_000) ?? 1000
        if let threads = try invocation.int("--threads", in: 1...64) { pool.threads = threads }
        var manageEndpoint = ProviderEndpoint(host: manage.host, port: manage.port, tls: tls)
        manageEndpoint.serverName = pool.serverName
        var options = FanoutOptions(pool: pool, manage: manageEndpoint)
        let limit = try invocation.int("--start-limit", in: 0...127) ?? 8
        options.startLimit = limit == 0 ? nil : limit
        if let window = try invocation.double("--start-window", in: 1...7 * 86_400) { options.startWindow = Duration.seconds(window) }
        options.keepChannels = invocation.flag("--keep-channels")
        options.logPath = invocation.string("--log")
        options.android = try androidLane(invocation, tls: tls)
        return options
    }

    /// The Android options mean nothing without `--service-account` (64, before anything is opened).
    static func checkAndroidOptions(_ invocation: Invocation) throws(CLIError) {
        guard invocation.string("--service-account") == nil,
              let given = ["--fcm-host", "--fcm-connections", "--fcm-messages-per-minute"].first(where: { invocation.string($0) != nil }) else { return }
        throw .usage("\(given) needs --service-account (the Android side's credentials)")
    }

    /// The FCM lane from `--service-account` (nil without it), holding its first access token.
    static func androidLane(_ invocation: Invocation, tls: TLSConfiguration) throws(CLIError) -> FCMLane? {
        // `run` checked the FCM options' usage before anything was opened (`checkAndroidOptions`).
        guard invocation.string("--service-account") != nil else { return nil }
        let account = try FCMConnection.serviceAccount(invocation)
        let (host, port) = try APNsConnectionOptions.hostPort(invocation.string("--fcm-host") ?? "\(FCMEndpoint.host):443", option: "--fcm-host")
        var pool = PoolConfiguration.fcm(host: host, port: port, tls: tls, tokens: try FCMConnection.accessTokens(account, tls: tls, timeout: .seconds(30)))
        pool.serverName = try APNsConnectionOptions.serverName(invocation)
        pool.connections = try invocation.int("--fcm-connections", in: 1...256) ?? 4
        pool.messagesPerMinute = try invocation.int("--fcm-messages-per-minute", in: 1...100_000_000) ?? 600_000
        return FCMLane(pool: pool)
    }

    /// Prints the report (and chart), and turns it into the exit status.
    static func finish(_ result: FanoutResult, invocation: Invocation) throws(CLIError) -> ExitCode {
        let report = result.report
        if result.alreadySent {
            invocation.console.error("\(invocation.commandPath): event '\(report.eventKey)' serial \(report.serial) was already sent; nothing was sent again. Its report:")
        }
        if invocation.flag("--json") {
            // The report as stored, plus this run's memory (not part of the stored report).
            var json = report.json
            if !result.alreadySent {
                json.removeLast()
                json += Array(",\"peakAnonymousMB\":\(BenchCommand.fixed(result.peakMemory.anonymousMB, 1)),\"peakFileMB\":\(BenchCommand.fixed(result.peakMemory.fileMB, 1))}".utf8)
            }
            invocation.console.print(String(decoding: json, as: UTF8.self))
        } else {
            invocation.console.print(report.text)
            if !result.alreadySent {
                invocation.console.print("memory        peak \(BenchCommand.fixed(result.peakMemory.anonymousMB, 1)) MB anonymous (heap), \(BenchCommand.fixed(result.peakMemory.fileMB, 1)) MB file-backed (the store's map)")
            }
        }
        if let path = invocation.string("--svg"), !result.alreadySent {
            let subtitle = "\(report.targets) targets · \(report.delivered) delivered · \(BenchCommand.fixed(report.seconds, 1)) s · \(Int(report.pushesPerSecond.rounded())) pushes/s"
            try DeliveryChart(title: "sokuho fanout \(report.eventKey) serial \(report.serial) (\(report.kind))", subtitle: subtitle,
                              seriesLabel: "delivered", overTime: result.delivered, latency: result.latency).write(to: path)
        }
        if let stopped = report.stopped {
            // The breaker says the event's environment or topic is wrong (78); any other stop is
            // the way to APNs (69).
            let code: ExitCode
            if case .circuitBreaker? = result.stopped { code = .config } else { code = .unavailable }
            throw CLIError(code, stopped)
        }
        if !report.isComplete {
            throw CLIError(.refused, "\(report.failedTotal) failed, \(report.unknown) unknown, \(report.expired) expired of \(report.targets) targets")
        }
        if !report.warnings.isEmpty {
            // Per lane: "2 iOS phones not sent to: groups[0] (region:1): …", as many as a lane left out.
            let left = report.lanes.all.filter { $0.value.skipped > 0 }.map { "\($0.value.skipped) \($0.lane.platform.displayName) phones" }
            throw CLIError(.refused, "\(left.isEmpty ? "0 phones" : left.joined(separator: " and ")) not sent to: " + report.warnings.joined(separator: "; "))
        }
        return .success
    }

    static func cliError(_ error: FanoutError) -> CLIError {
        switch error.kind {
        case .invalidEvent: return CLIError(.dataError, error.message)
        case .store: return CLIError(.ioError, error.message)
        case .unavailable, .busy: return CLIError(.unavailable, error.message)
        case .refused: return CLIError(.refused, error.message)
        case .config: return CLIError(.config, error.message)
        }
    }
}

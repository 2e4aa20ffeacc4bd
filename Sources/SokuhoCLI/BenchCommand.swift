#if canImport(Glibc)
import Glibc
#endif
import APNs
import Crypto
import HTTP2
import IO
import Sender
import Vocabulary

/// `sokuho bench`: fans out N realistic push-to-start pushes to N distinct tokens through the
/// connection pool, against the simulator (a child process, so the numbers are the sender's alone)
/// or an external HTTP/2 server, and reports throughput, CPU per push, latency, memory, outcomes.
enum BenchCommand {
    static let spec = CommandSpec(
        "bench",
        summary: "measure fan-out: N push-to-start pushes to N distinct tokens through the connection pool",
        options: [
            OptionSpec("--provider", value: "P", help: "apns (default) or fcm: the same warning as FCM messages to the built-in simulator's FCM side (its quota off)"),
            OptionSpec("--pushes", value: "N", help: "pushes to send (default 100000)"),
            OptionSpec("--connections", value: "N", help: "HTTP/2 connections (default 4)"),
            OptionSpec("--streams", value: "N", help: "cap on concurrent streams per connection (default 1000)"),
            OptionSpec("--threads", value: "N", help: "event-loop threads (default: one per core, at most the connections)"),
            OptionSpec("--deadline", value: "SECONDS", help: "every push must be delivered within SECONDS of the start, or it ends expired (default 30)"),
            OptionSpec("--ping-after", value: "SECONDS", help: "PING a connection with streams in flight after SECONDS without a byte from it (default 2)"),
            OptionSpec("--ping-timeout", value: "SECONDS", help: "retire a connection whose PING is not answered within SECONDS (default 2)"),
            OptionSpec("--latency-ms", value: "N", help: "built-in simulator only: answer every push N ms late"),
            OptionSpec("--simulator-threads", value: "N", help: "built-in simulator only: its loop threads (default: one per core)"),
            OptionSpec("--faults", value: "SPEC", help: "built-in simulator only: a fault run (see below); e.g. random:7 or TooManyRequests=0.01,goaway=900,vanish=0.5:1"),
            OptionSpec("--target", value: "https://HOST:PORT", help: "an external HTTP/2 server instead of the built-in simulator"),
            OptionSpec("--ca-file", value: "PEM", help: "with --target: the CA of its certificate"),
            OptionSpec("--server-name", value: "NAME", help: "with --target: the TLS name to verify (default: the host)"),
        ] + APNsConnectionOptions.credentials + [
            OptionSpec("--topic", value: "BUNDLE_ID", help: "bundle ID of the pushes (default com.example.eew)"),
            OptionSpec("--json", help: "print {\"pushes\":…,\"seconds\":…,\"pushesPerSecond\":…,\"cpuSecondsPer100k\":…,\"p50Ms\":…,\"p99Ms\":…,\"peakRssMB\":…,\"outcomes\":{…}}"),
            OptionSpec("--svg", value: "FILE", help: "also write a chart to FILE (SVG): pushes answered over time and the latency distribution"),
        ],
        details: """
        Without --target, Sokuho starts its own simulator as a child process ('sokuho simulator') with
        its test key, so CPU and memory figures are the sender's only. With --target, provider tokens are
        sent only when --key, --key-id and --team-id are given.

        Exit status: 0 when every push was delivered; 1 when some ended otherwise (expired, unknown,
        failed after retries, refused); 69 when the pool stopped because the server could not be
        reached or refused the credentials.

        --faults SPEC (comma-separated; random:SEED draws a mix of 3-6): latency=MS, REASON=FRACTION
        (TooManyRequests, InternalServerError, ServiceUnavailable, ExpiredProviderToken, …),
        retry-after=S, goaway=N, goaway-reason=TEXT, reset=N, stall=N, slow=FRACTION:MS,
        vanish=AT:FOR, blackhole=AT:FOR, badcert=AT:FOR (seconds from the start). The pool then
        retries connections until the deadline as the daemon does, and the run is judged by
        invariants: one outcome per push, simulator accepted >= delivered and <= delivered +
        unknown + expired, no phone pushed twice, the run ended by its deadline. Exit status
        with --faults: 0 when they held (whatever the faults cost), 1 when one did not.
        """,
        subcommands: [BenchServeCommand.spec],
        run: run)

    struct Result {
        var pushes: Int
        var seconds: Double
        var cpuSeconds: Double
        var peakRSSMB: Double
        var p50: Double
        var p99: Double
        var counters: SenderCounters
        /// CPU the built-in simulator used (nil with --target).
        var simulatorCPUSeconds: Double?
        /// Why the pool stopped sending, if it did.
        var haltMessage: String?
        /// Finished pushes sampled through the run (ascending seconds, the last at the end), for --svg.
        var overTime: [(seconds: Double, count: Int)] = []
        var latencies = LatencyHistogram()

        var pushesPerSecond: Double { Double(pushes) / max(seconds, 1e-9) }
        var delivered: Int { counters[.delivered] + counters[.deliveredAfterRetry] }
    }

    static func run(_ invocation: Invocation) throws(CLIError) -> ExitCode {
        let pushes = try invocation.int("--pushes", in: 1...100_000_000) ?? 100_000
        let connections = try invocation.int("--connections", in: 1...256) ?? 4
        let streams = try invocation.int("--streams", in: 1...100_000) ?? 1000
        let latency = try invocation.int("--latency-ms", in: 0...600_000) ?? 0
        let bundle = invocation.string("--topic") ?? BenchPayload.bundle
        let fcm = try SendFCMCommand.isFCM(invocation)
        if fcm, let given = ["--target", "--faults", "--key", "--key-id", "--team-id", "--topic", "--ca-file", "--server-name"]
            .first(where: { invocation.values[$0] != nil }) {
            throw .usage("\(given) does not apply to --provider fcm, which measures against the built-in simulator's FCM side")
        }

        var child: ChildSimulator?
        defer { child?.stop() }
        var faulty: FaultyServer?
        var plan: FaultPlan?
        var configuration: PoolConfiguration
        if let target = invocation.string("--target") {
            guard invocation.string("--latency-ms") == nil else { throw .usage("--latency-ms applies to the built-in simulator only, not to --target") }
            guard target.hasPrefix("https://") else { throw .data("--target must look like https://HOST:PORT, not '\(target)'") }
            let (host, port) = try APNsConnectionOptions.hostPort(String(target.dropFirst(8).prefix { $0 != "/" }), option: "--target")
            let tls = try APNsConnectionOptions.tls(invocation)
            configuration = PoolConfiguration(host: host, port: port, tls: tls)
            configuration.serverName = try APNsConnectionOptions.serverName(invocation)
            if invocation.string("--key") != nil { configuration.providerTokens = try APNsConnectionOptions.providerTokens(invocation) }
        } else {
            let simulatorThreads = try invocation.int("--simulator-threads", in: 1...64) ?? Int(SystemInfo.cores)
            let simulator: ChildSimulator
            if let spec = invocation.string("--faults") {
                let faults = try FaultPlan(spec, deadline: try invocation.double("--deadline", in: 0.001...86_400) ?? 30)
                let server = try FaultyServer(streams: streams, latency: latency, threads: simulatorThreads, plan: faults)
                (plan, faulty, simulator) = (faults, server, server.first)
            } else {
                // FCM: the project's quota (600,000 a minute) off, as APNs has none to hit.
                simulator = try ChildSimulator.start(streams: streams, latencyMilliseconds: latency, threads: simulatorThreads,
                                                     extra: fcm ? ["--fcm-quota", "100000000"] : [])
                child = simulator
            }
            let tls: TLSConfiguration
            do { tls = try TLSConfiguration.client(caFile: simulator.caFile) } catch { throw CLIError(.software, error.description) }
            configuration = PoolConfiguration(host: "127.0.0.1", port: simulator.port, tls: tls)
            if fcm { configuration.provider = .fcm(try FCMConnection.simulatorAccessTokens(simulator, tls: tls)) }
            do {
                let key = try SigningKey(contentsOf: simulator.keyFile)
                configuration.providerTokens = ProviderTokenSource(signer: try ProviderTokenSigner(key: key, keyID: simulator.keyID, teamID: simulator.teamID))
            } catch {
                throw CLIError(.software, "the simulator's test key: \(error)")
            }
        }
        configuration.connections = connections
        configuration.streamsPerConnection = streams
        if let threads = try invocation.int("--threads", in: 1...64) { configuration.threads = threads }
        let deadline = try invocation.double("--deadline", in: 0.001...86_400) ?? 30
        if let seconds = try invocation.double("--ping-after", in: 0.01...86_400) { configuration.pingAfterSilence = .seconds(seconds) }
        if let seconds = try invocation.double("--ping-timeout", in: 0.01...3_600) { configuration.pingTimeout = .seconds(seconds) }

        if let plan, let faulty {
            // Like the daemon's pools: an outage is waited out until the deadline, never a halt.
            configuration.failFastAfterAttempts = .max
            if !invocation.flag("--json") { invocation.console.print("faults        \(plan)") }
            faulty.disrupt(plan)
        }
        var result = measure(pushes: pushes, configuration: configuration, bundle: bundle, deadline: .seconds(deadline),
                             console: invocation.console)
        if let child { result.simulatorCPUSeconds = child.stop() }
        if let plan, let faulty {
            let server = faulty.finish()
            result.simulatorCPUSeconds = server.cpuSeconds
            return judge(result, plan: plan, server: server, deadline: deadline, invocation: invocation)
        }
        report(result, invocation: invocation)
        if let path = invocation.string("--svg") {
            let title = "sokuho bench: \(pushes) pushes, \(connections) connections × \(streams) streams"
            try chart(result, title: title).write(to: path)
        }
        let counters = result.counters
        if counters.finished != pushes {
            throw CLIError(.software, "\(pushes - counters.finished) pushes have no outcome: this is a bug")
        }
        if counters[.authOrConnectionFailure] > 0 {
            let why = result.haltMessage ?? "the server refused the connection or the credentials"
            throw CLIError(.unavailable, "\(counters[.authOrConnectionFailure]) of \(pushes) pushes could not be sent: \(why)")
        }
        let delivered = result.delivered
        if delivered != pushes {
            let others = PushOutcome.allCases.filter { $0 != .delivered && $0 != .deliveredAfterRetry && counters[$0] > 0 }
            let list = others.map { "\($0) \(counters[$0])" }.joined(separator: ", ")
            throw CLIError(.refused, "\(pushes - delivered) of \(pushes) pushes were not delivered (\(list))")
        }
        return .success
    }

    static func measure(pushes: Int, configuration: PoolConfiguration, bundle: String, deadline: Duration, console: Console) -> Result {
        // One deadline for the whole run, like an event's: a push not delivered by then ends expired.
        let fcm = configuration.provider.accessTokens
        let group = fcm.map { PushGroup(label: "bench", template: BenchPayload.fcmTemplate, projectID: $0.account.projectID,
                                        deadline: MonotonicInstant.now() + deadline, resendUnknown: false) }
            ?? PushGroup(label: "bench", headers: BenchPayload.headers(bundle: bundle), body: BenchPayload.body(timestamp: WallClock.seconds()),
                         deadline: MonotonicInstant.now() + deadline, resendUnknown: false)
        // A bench that cannot get two descriptors for its loop has nothing to measure.
        let pool: ConnectionPool
        do { pool = try ConnectionPool(configuration: configuration) } catch { fatalError("sokuho bench: cannot start the pool: \(error)") }
        defer { pool.shutdown() }
        var template = fcm == nil ? DeviceToken(bytes: [UInt8](repeating: 0xA5, count: DeviceToken.issuedAPNsByteCount))! : BenchPayload.fcmToken

        let cpuStart = CPUUsage.seconds()
        let start = MonotonicInstant.now()
        var batch: [PushJob] = []
        batch.reserveCapacity(1024)
        var lastProgress = MonotonicInstant(nanoseconds: 0)
        // Every 200 ms, like the progress line: a few hundred samples even for long runs.
        var overTime: [(seconds: Double, count: Int)] = []
        for index in 0..<pushes {
            template.overwrite(at: 0, bigEndian: fcm == nil ? UInt64(index) : BenchPayload.fcmTokenHead(index))
            batch.append(PushJob(token: template, group: group, id: UInt64(index)))
            if batch.count == 1024 || index == pushes - 1 {
                pool.send(batch)
                batch.removeAll(keepingCapacity: true)
                let now = MonotonicInstant.now()
                if now - lastProgress > .milliseconds(200) {
                    lastProgress = now
                    let done = pool.finishedCount
                    overTime.append(((now - start).seconds, done))
                    console.progress("\rbench: \(done)/\(pushes) pushes done")
                }
            }
        }
        pool.waitUntilFinished { done in
            overTime.append(((MonotonicInstant.now() - start).seconds, done))
            console.progress("\rbench: \(done)/\(pushes) pushes done")
        }
        let seconds = (MonotonicInstant.now() - start).seconds
        overTime.append((seconds, pool.finishedCount))
        let cpu = CPUUsage.seconds() - cpuStart
        if console.isTerminal { console.progress("\r\u{1B}[K") }
        let (counters, latencies) = pool.statistics()
        return Result(pushes: pushes, seconds: seconds, cpuSeconds: cpu, peakRSSMB: CPUUsage.peakRSSMegabytes(),
                      p50: latencies.percentile(0.5), p99: latencies.percentile(0.99), counters: counters,
                      haltMessage: pool.haltMessage, overTime: overTime, latencies: latencies)
    }
}

#if canImport(Glibc)
import Glibc
#endif
import APNs
import Crypto
import JSONCore
import Simulator
import Vocabulary

/// `sokuho simulator`: the APNs look-alike on loopback, for tests, the demo and benchmarks.
enum SimulatorCommand {
    static let spec = CommandSpec(
        "simulator",
        summary: "run an APNs look-alike (device push, broadcast, channel management) on loopback",
        options: [
            OptionSpec("--listen", value: "HOST", help: "address to listen on (default 127.0.0.1)"),
            OptionSpec("--port", value: "N", help: "device push and broadcast port (default 0: any free port)"),
            OptionSpec("--manage-port", value: "N", help: "channel-management port (default 0: any free port)"),
            OptionSpec("--threads", value: "N", help: "loop threads serving device pushes (default 1)"),
            OptionSpec("--cert-dir", value: "DIR", help: "where the CA, server certificate and test key are read or generated (default: a new temporary directory)"),
            OptionSpec("--team-id", value: "ID", help: "also trust provider tokens of this team (with --key-id and --key)", environment: "SOKUHO_TEAM_ID"),
            OptionSpec("--key-id", value: "ID", help: "the key ID of --key", environment: "SOKUHO_KEY_ID"),
            OptionSpec("--key", value: "FILE", help: "a .p8 or public-key PEM whose tokens are accepted", environment: "SOKUHO_KEY"),
            OptionSpec("--bundle", value: "ID", help: "accept pushes only for this bundle ID (default: any)", repeatable: true),
            OptionSpec("--latency-ms", value: "N", help: "answer every push N ms late"),
            OptionSpec("--fail", value: "REASON=FRACTION", help: "answer REASON for that fraction of valid pushes, e.g. InternalServerError=0.01", repeatable: true),
            OptionSpec("--goaway-after", value: "N", help: "every Nth push request (over all connections): GOAWAY on its connection"),
            OptionSpec("--retry-after", value: "SECONDS", help: "send Retry-After: SECONDS with every 429 and 503 (APNs does not document one)"),
            OptionSpec("--goaway-reason", value: "TEXT", help: "put {\"reason\":\"TEXT\"} in the --goaway-after GOAWAY's debug data (default: no debug data)"),
            OptionSpec("--slow", value: "FRACTION=MS", help: "answer that fraction of requests MS late instead of --latency-ms (responses slower than a sender's deadline)"),
            OptionSpec("--stats", value: "FILE", help: "at exit, write the counters as JSON: accepted, distinct tokens accepted, rejected by reason, connections"),
            OptionSpec("--reset-after", value: "N", help: "every Nth push request: drop its connection without GOAWAY (in-flight pushes get no answer)"),
            OptionSpec("--stall-after", value: "N", help: "the Nth push request (over all connections, once): its connection goes silent — no answers, PING or SETTINGS ACKs, WINDOW_UPDATEs — and stays open until the client closes it"),
            OptionSpec("--token-scope", value: "key|connection", help: "where TooManyProviderTokenUpdates is counted: per connection (default), or per team and key ID over all connections (a new token within 20 minutes of the key's previous new token is refused)"),
            OptionSpec("--max-streams", value: "N", help: "SETTINGS_MAX_CONCURRENT_STREAMS after the first accepted push (default 1000)"),
            OptionSpec("--unregistered", value: "HEX", help: "answer 410 Unregistered for this token", repeatable: true),
            OptionSpec("--log", value: "FILE", help: "append one JSON line per accepted push (path, headers without authorization, body)"),
            OptionSpec("--duration", value: "SECONDS", help: "stop after this long (default: until SIGINT or SIGTERM)"),
            OptionSpec("--fcm-unregistered", value: "TOKEN", help: "FCM: answer 404 UNREGISTERED for this registration token", repeatable: true),
            OptionSpec("--fcm-sender-mismatch", value: "TOKEN", help: "FCM: answer 403 SENDER_ID_MISMATCH for this registration token (another project's)", repeatable: true),
            OptionSpec("--fcm-quota", value: "N", help: "FCM: messages per minute for the project, a sliding window (default 600000); over it 429 QUOTA_EXCEEDED with Retry-After"),
            OptionSpec("--fcm-token-lifetime", value: "SECONDS", help: "FCM: expires_in of the access tokens /token grants (default 3599)"),
            OptionSpec("--fcm-fail", value: "CODE=FRACTION", help: "FCM: answer CODE for that fraction of valid sends, e.g. UNAVAILABLE=0.01 (UNAVAILABLE, INTERNAL, QUOTA_EXCEEDED, UNREGISTERED, SENDER_ID_MISMATCH, UNAUTHENTICATED, THIRD_PARTY_AUTH_ERROR)", repeatable: true),
        ],
        details: """
        On start it prints one JSON line with what a client needs:
          {"port":…,"managePort":…,"caFile":"…","keyFile":"…","teamId":"SOKUHOTEAM","keyId":"SIMKEY0001",
           "fcmServiceAccountFile":"…","fcmProjectId":"sokuho-simulator"}
        e.g. sokuho send --host 127.0.0.1:PORT --ca-file CAFILE --key KEYFILE --team-id SOKUHOTEAM --key-id SIMKEY0001 …
        The port also plays FCM HTTP v1: POST /token (the service account's token_uri) and
        POST /v1/projects/sokuho-simulator/messages:send.
        On exit it prints the counters (accepted, rejected by reason) to stderr.
        """,
        run: run)

    static func configuration(from invocation: Invocation) throws(CLIError) -> SimulatorConfiguration {
        var configuration = SimulatorConfiguration()
        configuration.host = invocation.string("--listen") ?? "127.0.0.1"
        configuration.port = try invocation.int("--port", in: 0...65535) ?? 0
        configuration.managePort = try invocation.int("--manage-port", in: 0...65535) ?? 0
        configuration.threads = try invocation.int("--threads", in: 1...64) ?? 1
        configuration.latency = .milliseconds(try invocation.int("--latency-ms", in: 0...600_000) ?? 0)
        configuration.goAwayAfter = try invocation.int("--goaway-after", in: 1...Int(Int32.max)) ?? 0
        configuration.resetAfter = try invocation.int("--reset-after", in: 1...Int(Int32.max)) ?? 0
        configuration.stallAfter = try invocation.int("--stall-after", in: 1...Int(Int32.max)) ?? 0
        configuration.goAwayReason = invocation.string("--goaway-reason")
        configuration.retryAfterSeconds = try invocation.int("--retry-after", in: 0...86_400)
        if configuration.goAwayReason != nil && configuration.goAwayAfter == 0 {
            // The reason only travels on --goaway-after's GOAWAY: alone it would silently do nothing.
            throw .usage("--goaway-reason needs --goaway-after")
        }
        if let scope = try invocation.choice("--token-scope", ProviderTokenScope.allCases.map(\.rawValue)) {
            configuration.tokenScope = ProviderTokenScope(rawValue: scope)!
        }
        configuration.maximumStreams = UInt32(try invocation.int("--max-streams", in: 1...100_000) ?? 1000)
        configuration.bundles = Set(invocation.strings("--bundle"))
        configuration.logPath = invocation.string("--log")
        for text in invocation.strings("--unregistered") {
            // DeviceToken's error names the bad character, never the whole token.
            configuration.unregisteredTokens.insert(try SendCommand.option("--unregistered") { () throws(ValidationError) in try DeviceToken(hex: text) }.hex)
        }
        for text in invocation.strings("--fail") {
            guard let equals = text.firstIndex(of: "="), let fraction = Double(text[text.index(after: equals)...]),
                  (0...1).contains(fraction), equals != text.startIndex else {
                throw .data("--fail must be REASON=FRACTION with a fraction from 0 to 1, e.g. InternalServerError=0.01, not '\(text)'")
            }
            configuration.faults.append((String(text[..<equals]), fraction))
        }
        if let text = invocation.string("--slow") {
            guard let equals = text.firstIndex(of: "="), let fraction = Double(text[..<equals]), (0...1).contains(fraction),
                  let milliseconds = Int(text[text.index(after: equals)...]), (0...600_000).contains(milliseconds) else {
                throw .data("--slow must be FRACTION=MS, e.g. 0.001=40000, not '\(text)'")
            }
            configuration.slowFraction = fraction
            configuration.slowDelay = .milliseconds(milliseconds)
        }
        try fcmOptions(from: invocation, into: &configuration)
        // Duplicates are counted per token only when someone will read them.
        if invocation.string("--stats") != nil { configuration.trackTokens = true }
        return configuration
    }

    /// The `--fcm-*` options.
    static func fcmOptions(from invocation: Invocation, into configuration: inout SimulatorConfiguration) throws(CLIError) {
        configuration.fcmUnregisteredTokens = Set(invocation.strings("--fcm-unregistered"))
        configuration.fcmForeignTokens = Set(invocation.strings("--fcm-sender-mismatch"))
        for token in configuration.fcmUnregisteredTokens.union(configuration.fcmForeignTokens) where !DeviceToken.isFCMRegistrationToken(token) {
            throw .data("--fcm-unregistered/--fcm-sender-mismatch: not an FCM registration token (1 to 255 of A-Z a-z 0-9 _ : -)")
        }
        configuration.fcmQuotaPerMinute = try invocation.int("--fcm-quota", in: 1...100_000_000) ?? 600_000
        configuration.fcmAccessTokenLifetime = .seconds(try invocation.int("--fcm-token-lifetime", in: 1...86_400) ?? 3599)
        for text in invocation.strings("--fcm-fail") {
            guard let equals = text.firstIndex(of: "="), let fraction = Double(text[text.index(after: equals)...]), (0...1).contains(fraction),
                  SimulatorConfiguration.fcmFaultNames.contains(String(text[..<equals])) else {
                throw .data("--fcm-fail must be CODE=FRACTION with CODE one of \(SimulatorConfiguration.fcmFaultNames.joined(separator: ", ")) and a fraction from 0 to 1, not '\(text)'")
            }
            configuration.fcmFaults.append((String(text[..<equals]), fraction))
        }
    }

    static func run(_ invocation: Invocation) throws(CLIError) -> ExitCode {
        var configuration = try configuration(from: invocation)
        let duration = try invocation.double("--duration", in: 0...31_536_000)
        let directory = invocation.string("--cert-dir") ?? TemporaryDirectory.make(prefix: "sokuho-simulator")
        let certificates: SimulatorCertificates
        do {
            certificates = try SimulatorCertificates.prepare(directory: directory)
            configuration.trustedKeys = [try certificates.trustedTestKey()]
        } catch {
            throw CLIError(.cantCreate, error.description)
        }
        if let keyPath = invocation.string("--key") {
            let teamID = try invocation.required("--team-id"), keyID = try invocation.required("--key-id")
            do {
                let key = try VerifyingKey(contentsOf: keyPath)
                configuration.trustedKeys.append(ProviderTokenVerifier.TrustedKey(keyID: keyID, teamID: teamID, key: key))
            } catch {
                throw CLIError(.dataError, "--key: \(error)")
            }
        }
        // Block SIGINT/SIGTERM before the loop thread starts, so only `SignalWait` receives them.
        SignalWait.block()
        let simulator: APNsSimulator
        do {
            simulator = try APNsSimulator(configuration: configuration, certificates: certificates)
        } catch {
            SignalWait.unblock()  // nothing is listening: let Ctrl-C work again (and leave an in-process caller as it was)
            switch error {
            case .logFile, .certificates: throw CLIError(.cantCreate, error.description)
            case .listen, .key: throw CLIError(.unavailable, error.description)
            }
        }
        var writer = JSONWriter()
        writer.beginObject()
        writer.key("port"); writer.int(simulator.port)
        writer.key("managePort"); writer.int(simulator.managePort)
        writer.key("caFile"); writer.string(certificates.ca)
        writer.key("keyFile"); writer.string(certificates.providerKey)
        writer.key("teamId"); writer.string(SimulatorCertificates.teamID)
        writer.key("keyId"); writer.string(SimulatorCertificates.keyID)
        writer.key("fcmServiceAccountFile"); writer.string(simulator.fcmServiceAccountFile)
        writer.key("fcmProjectId"); writer.string(simulator.fcmServiceAccount.projectID)
        writer.endObject()
        invocation.console.print(writer.string)

        SignalWait.untilTerminated(orAfter: duration)
        simulator.stop()
        let counters = simulator.counters
        let rejected = counters.rejected.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
        if let path = invocation.string("--stats") { try writeStats(counters, to: path) }
        if counters.fcmAccepted + counters.fcmRejected.values.reduce(0, +) + counters.fcmTokensGranted > 0 {
            let refused = counters.fcmRejected.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
            invocation.console.error("simulator: FCM accepted \(counters.fcmAccepted), refused \(counters.fcmRejected.values.reduce(0, +))\(refused.isEmpty ? "" : " (\(refused))"), access tokens granted \(counters.fcmTokensGranted)")
        }
        invocation.console.error("simulator: accepted \(counters.accepted), rejected \(counters.rejectedTotal)\(rejected.isEmpty ? "" : " (\(rejected))"), connections \(counters.connections)\(counters.connectionsStalled > 0 ? " (\(counters.connectionsStalled) stalled)" : ""), channel requests \(counters.channelRequests)")
        return .success
    }

    /// `--stats FILE`: what a fault run compares with the sender's outcomes (written whole or not
    /// at all: a temporary file renamed into place).
    static func writeStats(_ counters: SimulatorCounters, to path: String) throws(CLIError) {
        var writer = JSONWriter()
        writer.beginObject()
        writer.key("accepted"); writer.int(counters.accepted)
        writer.key("distinctTokens"); writer.int(counters.acceptedPerToken.count)
        writer.key("rejected"); writer.beginObject()
        for (reason, count) in counters.rejected.sorted(by: { $0.key < $1.key }) { writer.key(reason); writer.int(count) }
        writer.endObject()
        writer.key("connections"); writer.int(counters.connections)
        writer.key("goAwaysSent"); writer.int(counters.goAwaysSent)
        writer.key("connectionsDropped"); writer.int(counters.connectionsDropped)
        writer.key("connectionsStalled"); writer.int(counters.connectionsStalled)
        writer.key("answersHeldBack"); writer.int(counters.answersHeldBack)
        writer.key("fcmAccepted"); writer.int(counters.fcmAccepted)
        writer.key("fcmDistinctTokens"); writer.int(counters.fcmAcceptedPerToken.count)
        writer.key("fcmRejected"); writer.beginObject()
        for (name, count) in counters.fcmRejected.sorted(by: { $0.key < $1.key }) { writer.key(name); writer.int(count) }
        writer.endObject()
        writer.key("fcmTokensGranted"); writer.int(counters.fcmTokensGranted)
        writer.endObject()
        let temporary = path + ".partial"
        guard let file = fopen(temporary, "w") else { throw CLIError(.cantCreate, "--stats \(path): \(String(cString: strerror(errno)))") }
        let bytes = writer.bytes
        let written = fwrite(bytes, 1, bytes.count, file)
        fclose(file)
        guard written == bytes.count, rename(temporary, path) == 0 else {
            throw CLIError(.ioError, "--stats \(path): \(String(cString: strerror(errno)))")
        }
    }
}

/// Blocks the calling thread until SIGINT or SIGTERM arrives (or `seconds` pass).
/// Threads started after `block()` inherit the mask, so the signal cannot kill them first.
enum SignalWait {
    private static var signals: sigset_t {
        var set = sigset_t()
        sigemptyset(&set)
        sigaddset(&set, SIGINT)
        sigaddset(&set, SIGTERM)
        return set
    }

    static func block() {
        var set = signals
        pthread_sigmask(SIG_BLOCK, &set, nil)
    }

    static func unblock() {
        var set = signals
        pthread_sigmask(SIG_UNBLOCK, &set, nil)
    }

    /// Blocks `extra` signals too (before threads start), so `next` can wait for them. An ignored
    /// signal is discarded even while blocked, and a parent may have left SIGTERM ignored (it is
    /// inherited across exec): the dispositions go back to the default first, or `sigwait` would
    /// never see the signal and the daemon could not be stopped.
    static func block(including extra: [Int32]) {
        var set = signals
        for signal in [SIGINT, SIGTERM] + extra {
            sigaddset(&set, signal)
            Glibc.signal(signal, SIG_DFL)
        }
        pthread_sigmask(SIG_BLOCK, &set, nil)
    }

    /// Waits for SIGINT, SIGTERM or one of `extra` (blocked with `block(including:)`); returns it.
    static func next(including extra: [Int32]) -> Int32 {
        var set = signals
        for signal in extra { sigaddset(&set, signal) }
        var signal: Int32 = 0
        while sigwait(&set, &signal) != 0 {}
        return signal
    }

    static func untilTerminated(orAfter seconds: Double?) {
        var set = signals
        pthread_sigmask(SIG_BLOCK, &set, nil)
        if let seconds {
            var timeout = timespec(tv_sec: Int(seconds), tv_nsec: Int((seconds - seconds.rounded(.down)) * 1e9))
            var info = siginfo_t()
            while sigtimedwait(&set, &info, &timeout) < 0 && errno == EINTR {}
        } else {
            var signal: Int32 = 0
            sigwait(&set, &signal)
        }
    }
}

/// A new private temporary directory.
enum TemporaryDirectory {
    static func make(prefix: String) -> String {
        let base = getenv("TMPDIR").map { String(cString: $0) } ?? "/tmp"
        var template = Array("\(base)/\(prefix)-XXXXXX".utf8CString)
        return template.withUnsafeMutableBufferPointer { buffer in
            guard let path = mkdtemp(buffer.baseAddress!) else { return "\(base)/\(prefix)" }
            return String(cString: path)
        }
    }
}

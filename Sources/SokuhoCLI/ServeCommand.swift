#if canImport(Glibc)
import Glibc
#endif
import APNs
import Daemon
import DaemonConfiguration
import Runtime
import IO
import JSONCore

/// `sokuho serve`: the daemon (issue 12). It loads the file, the `SOKUHO_*` variables and the
/// flags, checks them whole, then runs until a signal (`--check-config` prints what would run and
/// exits; `--promote` asks a running standby to take over). Every setting's option comes from
/// `ServeSetting.all`, so the file, the flags and the help cannot drift apart.
enum ServeCommand {
    static let spec = CommandSpec(
        "serve",
        summary: "the push daemon: warm connections per app, the HTTP API for events, /metrics, /readyz",
        usage: "[--config FILE] [overrides] [--check-config [--json] | --promote]",
        options: [
            OptionSpec("--config", value: "FILE", help: "the configuration file (JSON; see \(InstalledDocumentation.section("Daemon configuration")))", environment: "SOKUHO_CONFIG"),
            OptionSpec("--check-config", help: "check the configuration, print a summary and exit"),
            OptionSpec("--json", help: "with --check-config: print the configuration, defaults filled in, as JSON"),
            OptionSpec("--promote", help: "promote the standby running with this configuration (POST /v1/promote on its first listen address with its admin token) and exit"),
        ] + ServeSetting.all.map { setting in
            OptionSpec(setting.flag, value: setting.placeholder, help: setting.help, environment: setting.variable, repeatable: setting.repeatable)
        },
        details: """
        Precedence: flag > SOKUHO_* variable > configuration file > default.

        Without --check-config it runs until SIGTERM or SIGINT (running events finish, queued ones
        are resumed by the next start). SIGHUP reloads the configuration file: apps whose key,
        ids, endpoints and pool are unchanged keep their warm connections; changed ones reconnect;
        listen, storePath, maxBodyBytes and statusPage take effect at the next restart. A file that
        does not load changes nothing (the message says why); on a standby it
        also looks at the shipped backup at once. Its first line on stdout is
        {"listen":["HOST:PORT",…]} with the bound ports. Under systemd (Type=notify) it reports
        READY=1 once it listens.

        With --standby it connects and checks credentials but sends nothing: events and
        registrations answer 503 "standby", /readyz answers 503. It applies the backup shipped to
        standbyBackupFile whenever it changes. It becomes the primary only when told: SIGUSR1, or
        sokuho serve --promote --config FILE (exit 0 promoted or already primary, 69 daemon
        unreachable, 1 refused). Never automatically: a partitioned primary would keep sending too.

        exit codes: 0 configuration valid / stopped by a signal · 64 usage · 66 configuration file
                    missing · 78 configuration invalid or the daemon cannot start (the message names
                    the field, flag, variable or address)
        """,
        run: run)

    /// Where the .deb installs the configuration (Packaging/build-deb).
    static let packagedConfiguration = "/etc/sokuho/sokuho.json"

    static func run(_ invocation: Invocation) throws(CLIError) -> ExitCode {
        let configuration = try load(invocation)
        if invocation.flag("--promote") { return try PromoteClient.promote(configuration, invocation: invocation) }
        if invocation.flag("--check-config") {
            invocation.console.print(invocation.flag("--json") ? configuration.json : configuration.summary)
            // Root reads every file: a key the daemon's user cannot read would pass here and fail at
            // start. Said on stderr, so the summary and --json stay as they are.
            if geteuid() == 0 {
                invocation.console.error("sokuho serve: note: checked as root, who can read every file; the packaged daemon runs as 'sokuho': "
                                         + "runuser -u sokuho -- sokuho serve --check-config … checks what it can read")
            }
            return .success
        }
        return try serve(configuration, invocation: invocation)
    }

    /// The configuration file (read again at each SIGHUP), then the `SOKUHO_*` variables and the
    /// flags of this invocation on top.
    static func load(_ invocation: Invocation) throws(CLIError) -> ServeConfiguration {
        var file: [UInt8]?
        if let path = invocation.string("--config") {
            // `serve` documents 0/66/78: a file too large to be a configuration is an invalid one.
            do { file = try InputFile.read(path, option: "--config", limit: 1 << 20) } catch {
                throw error.code == .dataError ? CLIError(.config, error.message + "; a configuration is at most 1 MiB") : error
            }
        }
        // Only the flags: the variables go in separately, so a message can name which one was wrong.
        let flags = invocation.values.filter { name, _ in ServeSetting.all.contains { $0.flag == name } }
        do {
            return try ServeConfiguration.load(file: file, environment: invocation.environment, flags: flags)
        } catch {
            let source = invocation.string("--config").map { "\($0): " } ?? ""
            // Without --config only SOKUHO_* variables and flags configure it: say where the
            // package's file is, the likelier intent.
            let hint = invocation.string("--config") == nil
                ? " (no --config given; the package's configuration is \(packagedConfiguration): sokuho serve --config \(packagedConfiguration))" : ""
            throw CLIError(.config, source + error.description + hint)
        }
    }

    /// Runs the daemon until SIGTERM or SIGINT; SIGHUP reloads the configuration (`Service.reload`).
    static func serve(_ configuration: ServeConfiguration, invocation: Invocation) throws(CLIError) -> ExitCode {
        // Before any thread starts, so no thread but this one ever takes these signals.
        SignalWait.block(including: [SIGHUP, SIGUSR1])
        // The soft limit up to the hard one (systemd's LimitNOFILE, or ulimit -Hn by hand); too low a
        // hard limit is said once here, and shows later as sokuho_api_refused_no_descriptor_total.
        let environment = invocation.environment
        let console = invocation.console
        // Every line of the running daemon goes through one log, with its level and format
        // (`DaemonLog`); a promotion also tells systemd, whatever the format.
        let log = DaemonLog(format: configuration.logFormat, environment: environment) { line in
            console.error(line)
            if line.contains("promoted to primary") { SystemdNotify.send("STATUS=primary", environment: environment) }
        }
        let limit = DescriptorLimit.raiseSoftToHard()
        if limit < configuration.descriptorsNeeded {
            log.warning("sokuho serve: the descriptor limit is \(limit) and this configuration needs about \(configuration.descriptorsNeeded); "
                                     + "raise it (LimitNOFILE= in the unit, ulimit -n) or the API will answer 503 when it runs out")
        }
        let daemon: Daemon
        do { daemon = try Daemon(configuration: configuration, log: log) } catch {
            throw CLIError(.config, error.description)
        }
        let service = daemon.runtime
        daemon.start()
        let addresses = zip(configuration.listen, daemon.ports).map { Endpoint(host: $0.host, port: $1).description }
        // One JSON line first (scripts and tests read the ports from it), then the human summary.
        var writer = JSONWriter()
        writer.beginObject(); writer.key("listen"); writer.beginArray()
        for address in addresses { writer.string(address) }
        writer.endArray()
        writer.key("standby"); writer.bool(service.isStandby)
        writer.endObject()
        invocation.console.print(writer.string)
        let role = service.isStandby ? "standby (sends nothing until promoted), " : ""
        log.info("sokuho serve: \(role)listening on \(addresses.joined(separator: ", ")); apps \(configuration.apps.map { "\($0.bundleID.text) (\($0.environment.rawValue))" }.joined(separator: ", "))")
        SystemdNotify.send("READY=1\nSTATUS=\(role)listening on \(addresses.joined(separator: ", "))", environment: invocation.environment)
        while true {
            let signal = SignalWait.next(including: [SIGHUP, SIGUSR1])
            if signal == SIGUSR1 {
                if service.promote() == .alreadyPrimary { service.logger.info("sokuho serve: SIGUSR1: already the primary") }
                continue
            }
            guard signal == SIGHUP else { break }
            service.followBackup()
            SystemdNotify.send("RELOADING=1", environment: invocation.environment)
            do {
                let report = try service.reload(try load(invocation))
                service.logger.info("sokuho serve: SIGHUP: configuration reloaded")
                for line in report.lines { service.logger.info("sokuho serve: SIGHUP: " + line) }
            } catch let error as CLIError {
                service.logger.error("sokuho serve: SIGHUP: \(error.message); nothing changed, the previous configuration stays")
            } catch {
                service.logger.error("sokuho serve: SIGHUP: \(error); nothing changed, the previous configuration stays")
            }
            SystemdNotify.send("READY=1", environment: invocation.environment)
        }
        SystemdNotify.send("STOPPING=1", environment: invocation.environment)
        service.logger.info("sokuho serve: stopping: finishing running events, closing connections")
        daemon.stop()
        return .success
    }
}

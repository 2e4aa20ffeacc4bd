import Daemon

/// `sokuho serve`: the daemon (issue 12). This build has its configuration only: `--check-config`
/// loads the file, the `SOKUHO_*` variables and the flags, checks them whole and prints what would
/// run. Every setting's option comes from `ServeSetting.all`, so the file, the flags and the help
/// cannot drift apart.
enum ServeCommand {
    static let spec = CommandSpec(
        "serve",
        summary: "the push daemon: API, status page, pools (this build: --check-config only)",
        usage: "[--config FILE] [overrides] --check-config [--json]",
        options: [
            OptionSpec("--config", value: "FILE", help: "the configuration file (JSON; see the README's \"Daemon configuration\")", environment: "SOKUHO_CONFIG"),
            OptionSpec("--check-config", help: "check the configuration, print a summary and exit"),
            OptionSpec("--json", help: "with --check-config: print the configuration, defaults filled in, as JSON"),
        ] + ServeSetting.all.map { setting in
            OptionSpec(setting.flag, value: setting.placeholder, help: setting.help, environment: setting.variable, repeatable: setting.repeatable)
        },
        details: """
        Precedence: flag > SOKUHO_* variable > configuration file > default.

        exit codes: 0 configuration valid · 64 usage (without --check-config: the daemon is not in
                    this build) · 66 configuration file missing · 78 configuration invalid (the
                    message names the field, flag or variable)
        """,
        run: run)

    static func run(_ invocation: Invocation) throws(CLIError) -> ExitCode {
        guard invocation.flag("--check-config") else {
            throw .usage("only --check-config is available in this build (the daemon itself is not built yet): "
                         + "sokuho serve --config FILE --check-config")
        }
        var file: [UInt8]?
        if let path = invocation.string("--config") { file = try InputFile.read(path, option: "--config", limit: 1 << 20) }
        // Only the flags: the variables go in separately, so a message can name which one was wrong.
        let flags = invocation.values.filter { name, _ in ServeSetting.all.contains { $0.flag == name } }
        let configuration: ServeConfiguration
        do {
            configuration = try ServeConfiguration.load(file: file, environment: invocation.environment, flags: flags)
        } catch {
            let source = invocation.string("--config").map { "\($0): " } ?? ""
            throw CLIError(.config, source + error.description)
        }
        invocation.console.print(invocation.flag("--json") ? configuration.json : configuration.summary)
        return .success
    }
}

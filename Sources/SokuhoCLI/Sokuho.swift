/// The command table and the entry point. Every sub-command is one `CommandSpec` in its own file;
/// this list is the only place that knows them all.
public enum Sokuho {
    public static let root = CommandSpec(
        "sokuho",
        summary: "fan out APNs pushes (Live Activity start, update, end) fast, from a small box",
        details: """
        exit codes: 0 ok · 1 APNs refused · 64 usage · 65 invalid input · 66 missing input file ·
                    69 server unreachable or TLS failed · 73/74 cannot write · 75 try again ·
                    77 permission denied · 78 configuration

        'sokuho help --man' prints all of this as the man page sokuho(1).
        """,
        subcommands: [
            SendCommand.spec,
            ChannelsCommand.spec,
            SimulatorCommand.spec,
            BenchCommand.spec,
            VersionCommand.spec,
            TokensCommand.spec,
            ActivitiesCommand.spec,
            FanoutCommand.spec,
            DemoCommand.spec,
            StoreCommand.spec,
            ServeCommand.spec,
        ])

    /// Runs the command line `arguments` (without the program name) and returns the exit code.
    public static func run(_ arguments: [String], environment: [String: String], console: Console) -> ExitCode {
        var arguments = arguments
        if arguments.first == "--version" || arguments.first == "-V" { arguments[0] = "version" }
        // sokuho(1) from the same table as --help (Packaging/build-deb installs it). Not a command
        // of the table: the man page would list it as one among the pushes and the store.
        if arguments == ["help", "--man"] {
            console.write(ManPage.render())
            return .success
        }
        let parser = CommandLineParser(root: root)
        do {
            switch try parser.parse(arguments, environment: environment, console: console) {
            case let .help(command, path):
                console.print(CommandLineParser.help(for: command, path: path))
                // A bare group ("sokuho channels") prints its help but is still a usage error for scripts.
                let askedForHelp = arguments.contains("--help") || arguments.contains("-h") || arguments.first == "help"
                return askedForHelp ? .success : .usage
            case let .run(command, invocation):
                return try command.run!(invocation)
            }
        } catch {
            let message = error.message
            // Parser errors already start with the command path; command errors do not (one may
            // start with a file name such as "sokuho.json", hence the separator).
            if message.hasPrefix("sokuho:") || message.hasPrefix("sokuho ") {
                console.error(message)
            } else {
                console.error("\(commandPath(for: arguments)): \(message)")
            }
            return error.code
        }
    }

    /// "sokuho send" for ["send", "--token", …]: the longest run of known sub-command names.
    static func commandPath(for arguments: [String]) -> String {
        var command = root
        var path = root.name
        for word in arguments {
            guard let next = command.subcommands.first(where: { $0.name == word }) else { break }
            command = next
            path += " " + word
        }
        return path
    }
}

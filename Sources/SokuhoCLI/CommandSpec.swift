/// One option of a command, as the table declares it. `--help` text, parsing and environment
/// fall-back all come from this one declaration.
public struct OptionSpec: Sendable {
    /// The long name with its dashes, e.g. "--team-id".
    public let name: String
    /// The placeholder of its value ("ID", "FILE"), or nil for a flag without a value.
    public let value: String?
    public let help: String
    /// An environment variable used when the option is absent (e.g. "SOKUHO_TEAM_ID").
    public let environment: String?
    /// Whether the option may be given several times (values are kept in order).
    public let repeatable: Bool

    public init(_ name: String, value: String? = nil, help: String, environment: String? = nil, repeatable: Bool = false) {
        self.name = name
        self.value = value
        self.help = help
        self.environment = environment
        self.repeatable = repeatable
    }

    /// The help as `--help` and the man page print it: with its variable and whether it repeats.
    public var fullHelp: String {
        var text = help
        if let environment { text += " [env \(environment)]" }
        if repeatable { text += " (repeatable)" }
        return text
    }
}

/// A positional argument.
public struct PositionalSpec: Sendable {
    public let name: String
    public let help: String
    public let required: Bool
    public init(_ name: String, help: String, required: Bool = true) {
        self.name = name
        self.help = help
        self.required = required
    }
}

/// A command (or a group of sub-commands) in the table.
public struct CommandSpec: Sendable {
    public typealias Handler = @Sendable (Invocation) throws(CLIError) -> ExitCode

    public let name: String
    public let summary: String
    /// Text after "usage: sokuho <path>" (e.g. "(--token HEX | --channel ID) --payload FILE|-").
    public let usage: String
    public let options: [OptionSpec]
    public let positionals: [PositionalSpec]
    public let subcommands: [CommandSpec]
    /// Extra help paragraphs (examples, exit codes).
    public let details: String
    public let run: Handler?

    public init(_ name: String, summary: String, usage: String = "[options]", options: [OptionSpec] = [],
                positionals: [PositionalSpec] = [], details: String = "", subcommands: [CommandSpec] = [],
                run: Handler? = nil) {
        self.name = name
        self.summary = summary
        self.usage = usage
        self.options = options
        self.positionals = positionals
        self.subcommands = subcommands
        self.details = details
        self.run = run
    }
}

/// The one table-driven parser every command uses. It walks the command table to the sub-command
/// named on the command line, then reads options against that command's declared `OptionSpec`s.
///
/// Rules: `--name value` or `--name=value`; a flag takes no value; `--` ends options; `-h`/`--help`
/// prints the command's help; anything undeclared is a one-line usage error (exit 64).
public struct CommandLineParser: Sendable {
    public let root: CommandSpec

    public init(root: CommandSpec) { self.root = root }

    /// What the command line asks for.
    public enum Parsed {
        case run(CommandSpec, Invocation)
        case help(CommandSpec, path: String)
    }

    public func parse(_ arguments: [String], environment: [String: String], console: Console) throws(CLIError) -> Parsed {
        var command = root
        var path = root.name
        var index = 0
        // Descend through sub-command names.
        while !command.subcommands.isEmpty {
            // A command that runs by itself and has sub-commands (`bench`, `bench serve`) runs
            // itself unless a sub-command's name comes next.
            if command.run != nil, index >= arguments.count || (arguments[index].hasPrefix("-") && !["--help", "-h"].contains(arguments[index])) {
                break
            }
            guard index < arguments.count else { return .help(command, path: path) }
            let word = arguments[index]
            if word == "--help" || word == "-h" || word == "help" { return .help(command, path: path) }
            guard let next = command.subcommands.first(where: { $0.name == word }) else {
                if word.hasPrefix("-"), command.run == nil {
                    throw .usage("\(path): unknown option '\(word)'; see '\(path) --help'")
                }
                let hint = Suggestion.hint(for: word, among: command.subcommands.map(\.name))
                throw .usage("\(path): unknown command '\(word)'\(hint); see '\(path) --help'")
            }
            command = next
            path += " " + next.name
            index += 1
        }

        var values: [String: [String]] = [:]
        var positionals: [String] = []
        var optionsEnded = false
        while index < arguments.count {
            let word = arguments[index]
            index += 1
            if optionsEnded || !word.hasPrefix("-") || word == "-" {
                positionals.append(word)
                continue
            }
            if word == "--" { optionsEnded = true; continue }
            if word == "--help" || word == "-h" { return .help(command, path: path) }
            var name = word
            var inlineValue: String?
            if let equals = word.firstIndex(of: "=") {
                name = String(word[..<equals])
                inlineValue = String(word[word.index(after: equals)...])
            }
            guard let option = command.options.first(where: { $0.name == name }) else {
                let hint = Suggestion.hint(for: name, among: command.options.map(\.name) + ["--help"])
                throw .usage("\(path): unknown option '\(name)'\(hint); see '\(path) --help'")
            }
            if values[name] != nil, !option.repeatable {
                throw .usage("\(path): option '\(name)' given twice")
            }
            if let placeholder = option.value {
                let value: String
                if let inlineValue {
                    value = inlineValue
                } else {
                    guard index < arguments.count else {
                        throw .usage("\(path): option '\(name)' needs a value (\(placeholder))")
                    }
                    value = arguments[index]
                    index += 1
                }
                values[name, default: []].append(value)
            } else {
                if inlineValue != nil { throw .usage("\(path): option '\(name)' takes no value") }
                values[name, default: []].append("")
            }
        }

        let maximum = command.positionals.count
        if positionals.count > maximum {
            throw .usage("\(path): unexpected argument '\(positionals[maximum])'; see '\(path) --help'")
        }
        if let missing = command.positionals.dropFirst(positionals.count).first(where: \.required) {
            throw .usage("\(path): missing \(missing.name); see '\(path) --help'")
        }
        guard command.run != nil else { return .help(command, path: path) }
        let invocation = Invocation(commandPath: path, values: values, positionals: positionals,
                                    environment: environment, console: console, spec: command)
        return .run(command, invocation)
    }

    /// The `--help` text of a command, generated from its table entry.
    public static func help(for command: CommandSpec, path: String) -> String {
        var lines: [String] = []
        lines.append("\(path) — \(command.summary)")
        lines.append("")
        if command.subcommands.isEmpty || command.run != nil {
            lines.append("usage: \(path) \(usage(of: command))")
        }
        if !command.subcommands.isEmpty {
            lines.append(command.run == nil ? "usage: \(path) <command> [options]" : "   or: \(path) <command> [options]")
            lines.append("")
            lines.append("commands:")
            let width = command.subcommands.map(\.name.count).max() ?? 0
            for sub in command.subcommands {
                lines.append("  \(pad(sub.name, width))  \(sub.summary)")
            }
        }
        if !command.positionals.isEmpty {
            lines.append("")
            lines.append("arguments:")
            let width = command.positionals.map(\.name.count).max() ?? 0
            for positional in command.positionals {
                lines.append("  \(pad(positional.name, width))  \(positional.help)")
            }
        }
        let options = command.options + [OptionSpec("--help", help: "show this help")]
        lines.append("")
        lines.append("options:")
        let labels = options.map { $0.name + ($0.value.map { " " + $0 } ?? "") }
        let width = labels.map(\.count).max() ?? 0
        for (option, label) in zip(options, labels) {
            lines.append("  \(pad(label, width))  \(option.fullHelp)")
        }
        if !command.details.isEmpty {
            lines.append("")
            lines.append(command.details)
        }
        if !command.subcommands.isEmpty {
            lines.append("")
            lines.append("Run '\(path) <command> --help' for a command's options.")
        }
        return lines.joined(separator: "\n")
    }

    /// What follows the command's path on its usage line: the declared usage, then the positionals
    /// it does not already place (`fanout`'s "EVENT.json --store DIR …" names EVENT.json once).
    /// `--help` and the man page (`ManPage`) both print it.
    static func usage(of command: CommandSpec) -> String {
        let placed = Set(command.usage.split(separator: " ").map { String($0) })
        let positionalText = command.positionals.filter { !placed.contains($0.name) && !placed.contains("[\($0.name)]") }
            .map { $0.required ? $0.name : "[\($0.name)]" }.joined(separator: " ")
        return command.usage + (positionalText.isEmpty ? "" : " " + positionalText)
    }

    private static func pad(_ text: String, _ width: Int) -> String {
        text + String(repeating: " ", count: max(0, width - text.count))
    }
}

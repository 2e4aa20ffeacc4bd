/// A parsed command line for one command: option values, positionals, the environment, and the
/// console to write to. Accessors turn a bad value into a `CLIError` naming the option.
public struct Invocation: Sendable {
    /// "sokuho send", "sokuho channels create": how messages name the command.
    public let commandPath: String
    public let values: [String: [String]]
    public let positionals: [String]
    public let environment: [String: String]
    public let console: Console
    let spec: CommandSpec

    /// The option's value: the last one given, else its environment variable, else nil.
    public func string(_ name: String) -> String? {
        if let given = values[name]?.last { return given }
        if let variable = spec.options.first(where: { $0.name == name })?.environment,
           let value = environment[variable], !value.isEmpty {
            return value
        }
        return nil
    }

    /// All values of a repeatable option, in order.
    public func strings(_ name: String) -> [String] { values[name] ?? [] }

    /// Whether a flag was given.
    public func flag(_ name: String) -> Bool { values[name] != nil }

    /// A value that must be present; the error names the option (and its variable).
    public func required(_ name: String) throws(CLIError) -> String {
        if let value = string(name) { return value }
        let variable = spec.options.first(where: { $0.name == name })?.environment
        throw .usage("missing \(name)\(variable.map { " (or \($0))" } ?? ""); see '\(commandPath) --help'")
    }

    /// An integer option within `range`, or nil when absent.
    public func int(_ name: String, in range: ClosedRange<Int>) throws(CLIError) -> Int? {
        guard let text = string(name) else { return nil }
        guard let value = Int(text), range.contains(value) else {
            throw .data("\(name) must be a whole number from \(range.lowerBound) to \(range.upperBound), not '\(text)'")
        }
        return value
    }

    /// A decimal option within `range`, or nil when absent.
    public func double(_ name: String, in range: ClosedRange<Double>) throws(CLIError) -> Double? {
        guard let text = string(name) else { return nil }
        guard let value = Double(text), value.isFinite, range.contains(value) else {
            throw .data("\(name) must be a number from \(range.lowerBound) to \(range.upperBound), not '\(text)'")
        }
        return value
    }

    /// One of `choices`, or nil when absent.
    public func choice(_ name: String, _ choices: [String]) throws(CLIError) -> String? {
        guard let text = string(name) else { return nil }
        guard choices.contains(text) else {
            throw .data("\(name) must be one of \(choices.joined(separator: ", ")), not '\(text)'")
        }
        return text
    }

    /// The positional named `name` in the spec, or nil when absent.
    public func positional(_ name: String) -> String? {
        guard let index = spec.positionals.firstIndex(where: { $0.name == name }), index < positionals.count else { return nil }
        return positionals[index]
    }
}

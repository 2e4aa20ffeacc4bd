import JSONCore

/// A setting's value as given: a member of the configuration file, or the text of a flag or a
/// `SOKUHO_*` variable (several for a repeatable flag or a comma-separated variable). One reader
/// takes both, so a value is held to the same rule and message wherever it comes from.
public enum SettingInput: Sendable {
    case json(JSONValue)
    case text([String])
}

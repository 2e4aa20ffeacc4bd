/// How `sokuho serve` writes its log lines on stderr (`logFormat`, `--log-format`,
/// `SOKUHO_LOG_FORMAT`): for a person reading `journalctl`, or for a log shipper.
public enum LogFormat: String, Sendable, CaseIterable {
    /// One line per event: the level, the message, then `name=value` fields (quoted when needed).
    case text
    /// One JSON object per line: `level`, `message` and the fields as members (`time` unless journald stamps it).
    case json
}

#if canImport(Glibc)
import Glibc
#endif
import DaemonConfiguration
import JSONCore
import Vocabulary

/// The daemon's log on stderr (issue 24): one line per thing an operator needs at 3 a.m. — an
/// event accepted or ended, a backup applied, a credential check turning, a pool halting — each
/// with a level and its facts as named fields. Text for people (`journalctl -u sokuho`), JSON lines
/// for log shippers (`logFormat`). Under journald (`JOURNAL_STREAM` set) no timestamp is written:
/// the journal stamps every line itself, and a second one only widens it.
///
/// Nothing secret goes in: callers pass event keys, counts, app names and reasons, never a device
/// token, a key, the admin token or a JWT.
public struct DaemonLog: Sendable {
    /// A field's value: written bare (numbers) or as a string (quoted in text when needed).
    public enum Value: Sendable, Equatable {
        case text(String)
        case int(Int)
        /// Seconds, written with millisecond precision.
        case seconds(Double)
    }

    public typealias Field = (name: String, value: Value)

    public let format: LogFormat
    /// Whether each line carries its own RFC 3339 UTC time (false under journald).
    public let timestamps: Bool
    private let write: @Sendable (String) -> Void

    public init(format: LogFormat, timestamps: Bool, write: @escaping @Sendable (String) -> Void) {
        self.format = format
        self.timestamps = timestamps
        self.write = write
    }

    /// The log `sokuho serve` writes: journald's stream (its variable set) gets no timestamps.
    public init(format: LogFormat, environment: [String: String], write: @escaping @Sendable (String) -> Void) {
        self.init(format: format, timestamps: environment["JOURNAL_STREAM"] == nil, write: write)
    }

    /// Writes nowhere (a service no command started, e.g. in tests).
    public static let silent = DaemonLog(format: .text, timestamps: false) { _ in }

    /// The same log in another format (a SIGHUP that changed `logFormat`).
    public func with(format: LogFormat) -> DaemonLog { DaemonLog(format: format, timestamps: timestamps, write: write) }

    public func info(_ message: String, _ fields: [Field] = []) { log(.info, message, fields) }
    public func warning(_ message: String, _ fields: [Field] = []) { log(.warning, message, fields) }
    public func error(_ message: String, _ fields: [Field] = []) { log(.error, message, fields) }

    public func log(_ level: LogLevel, _ message: String, _ fields: [Field] = []) {
        write(line(level, message, fields, time: timestamps ? Self.now() : nil))
    }

    /// One line, without its newline. `time`: the RFC 3339 stamp, or nil for none.
    public func line(_ level: LogLevel, _ message: String, _ fields: [Field], time: String?) -> String {
        switch format {
        case .text: Self.text(level, message, fields, time: time)
        case .json: Self.json(level, message, fields, time: time)
        }
    }

    /// `TIME LEVEL message name=value …`: the message with its control characters escaped (one
    /// event stays one line), each value quoted when it has a space, a quote, `=` or a control
    /// character, so a key like `a b="c"` cannot pass for other fields.
    static func text(_ level: LogLevel, _ message: String, _ fields: [Field], time: String?) -> String {
        var line = time.map { $0 + " " } ?? ""
        line += level.rawValue + " "
        line += escaped(message, quotes: false)
        for (name, value) in fields {
            line += " " + name + "="
            switch value {
            case let .text(text):
                let plain = !text.isEmpty && !text.unicodeScalars.contains { $0 == " " || $0 == "\"" || $0 == "=" || $0 == "\\" || isControl($0) }
                line += plain ? text : "\"" + escaped(text, quotes: true) + "\""
            case let .int(number): line += String(number)
            case let .seconds(seconds): line += decimal(seconds)
            }
        }
        return line
    }

    /// `{"time":…,"level":…,"message":…, fields…}` through the project's JSON writer.
    static func json(_ level: LogLevel, _ message: String, _ fields: [Field], time: String?) -> String {
        var writer = JSONWriter()
        writer.beginObject()
        if let time { writer.key("time"); writer.string(time) }
        writer.key("level"); writer.string(level.rawValue)
        writer.key("message"); writer.string(message)
        for (name, value) in fields {
            writer.key(name)
            switch value {
            case let .text(text): writer.string(text)
            case let .int(number): writer.int(number)
            case let .seconds(seconds): writer.double((seconds * 1000).rounded() / 1000)
            }
        }
        writer.endObject()
        return writer.string
    }

    /// Control characters as `\n`, `\r`, `\t` or `\u{…}`; inside a quoted value also `\` and `"`.
    private static func escaped(_ text: String, quotes: Bool) -> String {
        var out = ""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case "\"" where quotes: out += "\\\""
            case "\\" where quotes: out += "\\\\"
            default:
                if isControl(scalar) { out += "\\u{" + String(scalar.value, radix: 16) + "}" } else { out.unicodeScalars.append(scalar) }
            }
        }
        return out
    }

    private static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 0x20 || scalar.value == 0x7f || (0x80..<0xa0).contains(scalar.value) || scalar == "\u{2028}" || scalar == "\u{2029}"
    }

    /// Seconds with at most three decimals, never in exponent notation.
    static func decimal(_ seconds: Double) -> String {
        guard seconds.isFinite else { return "0" }
        let milliseconds = Int((seconds * 1000).rounded())
        let sign = milliseconds < 0 ? "-" : ""
        let whole = abs(milliseconds) / 1000, fraction = abs(milliseconds) % 1000
        let digits = String(fraction)
        return sign + String(whole) + "." + String(repeating: "0", count: 3 - digits.count) + digits
    }

    /// The current time as RFC 3339 in UTC with milliseconds (`2026-05-03T20:03:17.042Z`).
    static func now() -> String {
        let milliseconds = WallClock.milliseconds()
        return timestamp(seconds: Int(milliseconds / 1000), milliseconds: Int(milliseconds % 1000))
    }

    package static func timestamp(seconds: Int, milliseconds: Int) -> String {
        var time = time_t(seconds)
        var parts = tm()
        gmtime_r(&time, &parts)
        func padded(_ value: Int32, _ width: Int) -> String {
            let digits = String(value)
            return String(repeating: "0", count: max(0, width - digits.count)) + digits
        }
        return padded(parts.tm_year + 1900, 4) + "-" + padded(parts.tm_mon + 1, 2) + "-" + padded(parts.tm_mday, 2)
            + "T" + padded(parts.tm_hour, 2) + ":" + padded(parts.tm_min, 2) + ":" + padded(parts.tm_sec, 2)
            + "." + padded(Int32(milliseconds), 3) + "Z"
    }
}

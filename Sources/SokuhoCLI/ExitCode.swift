/// Process exit codes. Scripts act on these, so they never change meaning (sysexits.h values).
public enum ExitCode: Int32, Sendable {
    /// Done; for `send`, APNs answered 200.
    case success = 0
    /// APNs (or the simulator) answered, and refused: the reason is printed. For `tokens remove`:
    /// the store has no installation with that id (nothing changed), as `grep` finding nothing.
    case refused = 1
    /// The command line is wrong: unknown command or option, missing value.
    case usage = 64
    /// An input value is invalid (payload, token, option value), found before anything was sent.
    case dataError = 65
    /// An input file does not exist or cannot be read.
    case noInput = 66
    /// The server could not be reached, or TLS failed.
    case unavailable = 69
    /// A bug in Sokuho itself.
    case software = 70
    /// An output file or directory cannot be created.
    case cantCreate = 73
    /// A read or write failed part-way (disk full, I/O error).
    case ioError = 74
    /// Try again later (a store locked by another writer, a temporary failure).
    case tempFail = 75
    /// Permission denied (a read-only store directory, an unreadable key).
    case noPermission = 77
    /// Configuration is wrong (missing credentials, a corrupt or foreign store).
    case config = 78
}

/// A failure a user can act on: printed as one line, `sokuho <command>: <message>`, then exit `code`.
public struct CLIError: Error, Sendable, CustomStringConvertible {
    public let code: ExitCode
    public let message: String

    public init(_ code: ExitCode, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }

    public static func usage(_ message: String) -> CLIError { CLIError(.usage, message) }
    public static func data(_ message: String) -> CLIError { CLIError(.dataError, message) }
}

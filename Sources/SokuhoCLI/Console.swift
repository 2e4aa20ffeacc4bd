#if canImport(Glibc)
import Glibc
#endif

/// Where a command writes: the process's stdout/stderr, or buffers in tests.
public final class Console: @unchecked Sendable {
    // @unchecked: a Console is used by one command invocation on one thread at a time.
    private let writeOut: (String) -> Void
    private let writeErr: (String) -> Void
    /// Whether stderr is a terminal (progress lines are drawn only there).
    public let isTerminal: Bool

    public init(out: @escaping (String) -> Void, err: @escaping (String) -> Void, isTerminal: Bool = false) {
        self.writeOut = out
        self.writeErr = err
        self.isTerminal = isTerminal
    }

    /// The process's own stdout and stderr.
    public static func standard() -> Console {
        Console(out: { Console.write(1, $0) }, err: { Console.write(2, $0) }, isTerminal: isatty(2) == 1)
    }

    /// Prints a line to stdout.
    public func print(_ line: String) { writeOut(line + "\n") }
    /// Writes text to stdout as is (bulk output that carries its own newlines).
    public func write(_ text: String) { writeOut(text) }
    /// Prints a line to stderr.
    public func error(_ line: String) { writeErr(line + "\n") }
    /// Writes to stderr without a newline (progress lines that redraw with "\r").
    public func progress(_ text: String) { if isTerminal { writeErr(text) } }

    private static func write(_ fd: Int32, _ text: String) {
        var bytes = Array(text.utf8)
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeMutableBytes { Glibc.write(fd, $0.baseAddress! + offset, $0.count - offset) }
            if n < 0 { if errno == EINTR { continue }; return }
            offset += n
        }
    }
}

/// A console that keeps what was written, for tests.
public final class CapturedConsole: @unchecked Sendable {
    public private(set) var out = ""
    public private(set) var err = ""
    public lazy var console: Console = Console(out: { [unowned self] in self.out += $0 }, err: { [unowned self] in self.err += $0 })
    public init() {}
}

import Glibc
@testable import SokuhoCLI

/// A temporary directory for one CLI test, the commands run in-process, and the built `sokuho`
/// binary for what needs a real process (a kill, another user).
final class CLIFixture {
    let directory: String
    var store: String { directory + "/store" }

    init() {
        var template = Array("/tmp/sokuho-cli-test-XXXXXX".utf8CString)
        directory = template.withUnsafeMutableBufferPointer { String(cString: mkdtemp($0.baseAddress!)!) }
    }

    deinit { _ = CLIFixture.shell("rm -rf '\(directory)'") }

    /// Runs `sokuho arguments…` in this process; returns exit code, stdout, stderr.
    func run(_ arguments: [String], environment: [String: String] = [:]) -> (ExitCode, String, String) {
        let captured = CapturedConsole()
        let code = Sokuho.run(arguments, environment: environment, console: captured.console)
        return (code, captured.out, captured.err)
    }

    /// Writes `text` to a file in the directory and returns its path.
    func file(_ name: String, _ text: String) -> String {
        let path = directory + "/" + name
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        CLIFixture.writeAll(fd, text)
        close(fd)
        return path
    }

    /// Writes all of `text` to `fd`.
    static func writeAll(_ fd: Int32, _ text: String) {
        let bytes = Array(text.utf8)
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + offset, $0.count - offset) }
            if n <= 0 { break }
            offset += n
        }
    }

    static func readFile(_ path: String) -> String {
        guard let file = fopen(path, "r") else { return "" }
        defer { fclose(file) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = fread(&chunk, 1, chunk.count, file)
            if n == 0 { break }
            bytes += chunk[..<n]
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The `sokuho` executable built next to the test bundle.
    static var binary: String {
        var buffer = [CChar](repeating: 0, count: 4096)
        let count = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        let executable = String(decoding: buffer[..<max(0, count)].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        var parts = executable.split(separator: "/", omittingEmptySubsequences: false)
        // …/debug/SokuhoPackageTests.xctest (the runner) → …/debug/sokuho
        while let last = parts.last, !last.hasSuffix(".xctest") && parts.count > 1 { parts.removeLast() }
        parts.removeLast()
        return parts.joined(separator: "/") + "/sokuho"
    }

    /// Runs a shell command line, returns its exit status.
    @discardableResult
    static func shell(_ command: String) -> Int32 {
        let status = system(command)
        return (status >> 8) & 0xff
    }

    /// Starts `sokuho arguments…` with a pipe on stdin; returns its pid and the pipe's write end.
    static func spawn(_ arguments: [String]) -> (pid: pid_t, stdin: Int32) {
        var fds: [Int32] = [0, 0]
        pipe(&fds)
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        posix_spawn_file_actions_adddup2(&actions, fds[0], 0)
        posix_spawn_file_actions_addclose(&actions, fds[1])
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        let argv = ([binary] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid: pid_t = 0
        posix_spawn(&pid, binary, &actions, nil, argv, environ)
        posix_spawn_file_actions_destroy(&actions)
        close(fds[0])
        return (pid, fds[1])
    }
}

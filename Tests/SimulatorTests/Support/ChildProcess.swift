#if canImport(Glibc)
import Glibc
#endif

/// A program started with posix_spawn: curl, or the built `sokuho` binary. Its stdout is a socket the
/// test reads; its stderr goes to a file read after it ends.
final class ChildProcess {
    let pid: pid_t
    /// The read end of the child's stdout.
    let stdout: Int32
    let stderrPath: String
    private var buffered: [UInt8] = []

    /// Starts `program` (looked up in PATH when it has no slash) with `arguments`, reading `stdin`
    /// (a file path; /dev/null when nil). `environment`: variables set (a value) or removed (nil)
    /// on top of this process's own.
    init(_ program: String, _ arguments: [String], stdin: String? = nil, environment: [String: String?] = [:]) {
        var fds: [Int32] = [0, 0]
        // Close-on-exec from the start (socketpair takes the flag; pipe2 is not visible from Swift), so
        // children spawned by tests running in parallel never hold this child's stdout open.
        precondition(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &fds) == 0)
        stdout = fds[0]
        stderrPath = temporaryDirectory("sokuho-child") + "/stderr"
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        posix_spawn_file_actions_adddup2(&actions, fds[1], 1)
        posix_spawn_file_actions_addopen(&actions, 2, stderrPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_addopen(&actions, 0, stdin ?? "/dev/null", O_RDONLY, 0)
        let argv: [UnsafeMutablePointer<CChar>?] = ([program] + arguments).map { strdup($0) } + [nil]
        // A clean signal state: posix_spawn hands the child the calling thread's mask, and the test
        // runner's worker threads block nearly every signal, SIGCHLD included; a shell running jobs
        // with `&` then waits for SIGCHLD in sigsuspend forever (ServeTests' concurrent
        // registrations hung that way).
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        var empty = sigset_t(), all = sigset_t()
        sigemptyset(&empty)
        sigfillset(&all)
        posix_spawnattr_setsigmask(&attributes, &empty)
        posix_spawnattr_setsigdefault(&attributes, &all)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        var child: pid_t = 0
        var envp: [UnsafeMutablePointer<CChar>?] = []
        var pointer = environ
        while let entry = pointer.pointee {
            let text = String(cString: entry)
            let name = String(text.prefix { $0 != "=" })
            if environment.index(forKey: name) == nil { envp.append(strdup(entry)) }
            pointer += 1
        }
        for case let (name, value?) in environment { envp.append(strdup(name + "=" + value)) }
        envp.append(nil)
        defer { for entry in envp { free(entry) } }
        let rc = posix_spawnp(&child, program, &actions, &attributes, argv, envp)
        posix_spawnattr_destroy(&attributes)
        posix_spawn_file_actions_destroy(&actions)
        for pointer in argv { free(pointer) }
        close(fds[1])
        precondition(rc == 0, "posix_spawnp \(program): \(String(cString: strerror(rc)))")
        pid = child
    }

    deinit { close(stdout) }

    /// The next stdout line, or nil at end of output or after `seconds` (negative: no limit).
    func readLine(timeout seconds: Int32 = 20) -> String? {
        while true {
            if let newline = buffered.firstIndex(of: 10) {
                let line = String(decoding: buffered[..<newline], as: UTF8.self)
                buffered.removeSubrange(...newline)
                return line
            }
            var poller = pollfd(fd: stdout, events: Int16(POLLIN), revents: 0)
            guard poll(&poller, 1, seconds < 0 ? -1 : seconds * 1000) == 1 else { return nil }
            var chunk = [UInt8](repeating: 0, count: 4096)
            let n = chunk.withUnsafeMutableBytes { read(stdout, $0.baseAddress, $0.count) }
            if n <= 0 {
                // End of output: a last line without a newline is returned once (and forgotten, or
                // `readRest` would get it again forever).
                guard !buffered.isEmpty else { return nil }
                defer { buffered.removeAll() }
                return String(decoding: buffered, as: UTF8.self)
            }
            buffered.append(contentsOf: chunk[0..<n])
        }
    }

    /// Everything left on stdout, until the child closes it — however long it is silent: curl
    /// writing to a socket buffers its output until it exits, and 1,000 requests on a loaded
    /// machine took over the 20 s a line used to be waited for (the output was cut to nothing,
    /// and a channel round counted 0 answers of 1,000). The `wait()` after it has no limit either.
    func readRest() -> String {
        var text = ""
        while let line = readLine(timeout: -1) { text += line + "\n" }
        return text
    }

    /// Waits for the child and returns its exit status (128 + signal when a signal ended it).
    func wait() -> Int32 {
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        let signal = status & 0x7f
        return signal == 0 ? (status >> 8) & 0xff : 128 + signal
    }

    var stderr: String { String(decoding: readFile(stderrPath), as: UTF8.self) }

    /// Runs `program` to completion: exit status, stdout, stderr.
    static func run(_ program: String, _ arguments: [String], stdin: String? = nil) -> (status: Int32, out: String, err: String) {
        let child = ChildProcess(program, arguments, stdin: stdin)
        let out = child.readRest()
        return (child.wait(), out, child.stderr)
    }
}

#if canImport(Glibc)
import Glibc
#endif

/// Debian's curl, the independent HTTP/1.1 client of these tests. Many can run at once from
/// different threads; `run` waits for the process.
enum Curl {
    struct Result {
        let status: Int32
        let out: String
        let err: String
    }

    /// Runs `curl -sS --max-time 20 <arguments>`; `-w`/`-o`/`-D -` in `arguments` shape `out`.
    static func run(_ arguments: [String]) -> Result {
        // Socket pairs rather than pipes: they take SOCK_CLOEXEC at creation, so a curl started by
        // another test thread meanwhile never inherits (and holds open) this one's output.
        let out = socketPair(), err = socketPair()
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, out.write, 1)
        posix_spawn_file_actions_adddup2(&actions, err.write, 2)
        let argv: [UnsafeMutablePointer<CChar>?] = (["curl", "-sS", "--max-time", "20"] + arguments).map { strdup($0) } + [nil]
        var child: pid_t = 0
        let rc = posix_spawnp(&child, "curl", &actions, nil, argv, environ)
        posix_spawn_file_actions_destroy(&actions)
        for pointer in argv { free(pointer) }
        close(out.write)
        close(err.write)
        defer { close(out.read); close(err.read) }
        precondition(rc == 0, "cannot start curl (Toolchain/setup installs it): \(String(cString: strerror(rc)))")
        // stderr stays far below a socket buffer, so reading stdout to its end first cannot block curl.
        let text = readToEnd(out.read, timeout: 30).text
        let message = readToEnd(err.read, timeout: 30).text
        var status: Int32 = 0
        while waitpid(child, &status, 0) < 0 && errno == EINTR {}
        return Result(status: (status >> 8) & 0xff, out: text, err: message)
    }

    private static func socketPair() -> (read: Int32, write: Int32) {
        var fds: [Int32] = [0, 0]
        precondition(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &fds) == 0)
        return (fds[0], fds[1])
    }
}

/// A fresh temporary directory.
func temporaryDirectory() -> String {
    var template = Array("/tmp/sokuho-http-XXXXXX".utf8CString)
    return template.withUnsafeMutableBufferPointer { String(cString: mkdtemp($0.baseAddress!)!) }
}

func writeBytes(_ path: String, _ bytes: [UInt8]) {
    let file = fopen(path, "w")!
    defer { fclose(file) }
    _ = bytes.withUnsafeBufferPointer { fwrite($0.baseAddress, 1, $0.count, file) }
}

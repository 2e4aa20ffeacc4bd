#if canImport(Glibc)
import Glibc
#endif

/// Debian's curl, the independent HTTP/1.1 client of these tests. Output goes to files, so many can
/// run at once; `run` waits for the process.
enum Curl {
    struct Result {
        let status: Int32
        let out: String
        let err: String
    }

    /// Runs `curl -sS --max-time 20 <arguments>`; `-w`/`-o` in `arguments` shape `out`.
    static func run(_ arguments: [String]) -> Result {
        let dir = temporaryDirectory()
        let (outPath, errPath) = (dir + "/out", dir + "/err")
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, outPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_addopen(&actions, 2, errPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        let argv: [UnsafeMutablePointer<CChar>?] = (["curl", "-sS", "--max-time", "20"] + arguments).map { strdup($0) } + [nil]
        var child: pid_t = 0
        let rc = posix_spawnp(&child, "curl", &actions, nil, argv, environ)
        posix_spawn_file_actions_destroy(&actions)
        for pointer in argv { free(pointer) }
        precondition(rc == 0, "cannot start curl (Toolchain/setup installs it): \(String(cString: strerror(rc)))")
        var status: Int32 = 0
        while waitpid(child, &status, 0) < 0 && errno == EINTR {}
        return Result(status: (status >> 8) & 0xff, out: readText(outPath), err: readText(errPath))
    }
}

/// A fresh temporary directory.
func temporaryDirectory() -> String {
    var template = Array("/tmp/sokuho-http-XXXXXX".utf8CString)
    return template.withUnsafeMutableBufferPointer { String(cString: mkdtemp($0.baseAddress!)!) }
}

func readText(_ path: String) -> String {
    guard let file = fopen(path, "r") else { return "" }
    defer { fclose(file) }
    var bytes: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 65_536)
    while true {
        let n = chunk.withUnsafeMutableBufferPointer { fread($0.baseAddress, 1, $0.count, file) }
        if n == 0 { return String(decoding: bytes, as: UTF8.self) }
        bytes.append(contentsOf: chunk[0..<n])
    }
}

func writeBytes(_ path: String, _ bytes: [UInt8]) {
    let file = fopen(path, "w")!
    defer { fclose(file) }
    _ = bytes.withUnsafeBufferPointer { fwrite($0.baseAddress, 1, $0.count, file) }
}

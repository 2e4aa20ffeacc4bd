import Glibc
import Synchronization

/// Runs an external program (openssl, python3) to check our output with an independent
/// implementation. Output goes through files in the test's own directory, so a chatty child can
/// never block on a full pipe.
struct Subprocess {
    struct Result {
        let status: Int32
        let standardOutput: String
        let standardError: String
        var succeeded: Bool { status == 0 }
    }

    /// Runs `arguments[0]` (looked up on PATH) with the rest as arguments, in `directory`.
    static func run(_ arguments: [String], in directory: TemporaryDirectory) -> Result {
        let outPath = directory.path("stdout-\(counter())")
        let errPath = directory.path("stderr-\(counter())")
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, outPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_addopen(&actions, 2, errPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)

        let cArguments = arguments.map { strdup($0) } + [nil]
        defer { cArguments.forEach { free($0) } }
        var pid: pid_t = 0
        let spawned = posix_spawnp(&pid, arguments[0], &actions, nil, cArguments, environ)
        guard spawned == 0 else {
            return Result(status: -1, standardOutput: "", standardError: "cannot start \(arguments[0]): \(String(cString: strerror(spawned)))")
        }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        let exitStatus = (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
        return Result(status: exitStatus, standardOutput: directory.readText(outPath), standardError: directory.readText(errPath))
    }

    private static let sequence = Atomic<Int>(0)
    private static func counter() -> Int { sequence.add(1, ordering: .relaxed).newValue }
}

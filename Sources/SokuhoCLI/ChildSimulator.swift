#if canImport(Glibc)
import Glibc
#endif
import JSONCore

/// `sokuho simulator` started as a child process of this binary, so a benchmark's CPU and memory
/// figures are the sender's alone. It is stopped with SIGTERM (and reaped) when the bench ends.
final class ChildSimulator {
    let pid: pid_t
    let port: Int
    let managePort: Int
    let certDirectory: String
    let caFile: String
    let keyFile: String
    let teamID: String
    let keyID: String
    /// The service account the simulator wrote for its FCM side (`bench --provider fcm`).
    let fcmServiceAccountFile: String?

    private init(pid: pid_t, port: Int, managePort: Int, certDirectory: String, caFile: String, keyFile: String, teamID: String, keyID: String,
                 fcmServiceAccountFile: String?) {
        self.pid = pid
        self.port = port
        self.managePort = managePort
        self.certDirectory = certDirectory
        self.caFile = caFile
        self.keyFile = keyFile
        self.teamID = teamID
        self.keyID = keyID
        self.fcmServiceAccountFile = fcmServiceAccountFile
    }

    /// `extra`: more `sokuho simulator` options (a fault run's); `certDirectory` and `ports` to
    /// start it again where an earlier one ran (a fault run's server that vanishes and comes back).
    static func start(streams: Int, latencyMilliseconds: Int, threads: Int, extra: [String] = [], certDirectory: String? = nil,
                      ports: (push: Int, manage: Int)? = nil) throws(CLIError) -> ChildSimulator {
        let certDirectory = certDirectory ?? TemporaryDirectory.make(prefix: "sokuho-bench")
        var arguments = ["sokuho", "simulator", "--cert-dir", certDirectory, "--max-streams", String(streams),
                         "--latency-ms", String(latencyMilliseconds), "--threads", String(threads), "--duration", "86400"] + extra
        if let ports { arguments += ["--port", String(ports.push), "--manage-port", String(ports.manage)] }
        var pipeFDs: [Int32] = [0, 0]
        guard pipe(&pipeFDs) == 0 else { throw CLIError(.software, "pipe: \(String(cString: strerror(errno)))") }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, pipeFDs[1], 1)
        posix_spawn_file_actions_addclose(&actions, pipeFDs[0])
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var pid: pid_t = 0
        let rc = posix_spawn(&pid, selfPath, &actions, nil, &argv, environ)
        close(pipeFDs[1])
        guard rc == 0 else {
            close(pipeFDs[0])
            throw CLIError(.software, "cannot start the simulator: \(String(cString: strerror(rc)))")
        }
        // Its first stdout line is the JSON with ports and files.
        var line: [UInt8] = []
        var byte: UInt8 = 0
        while read(pipeFDs[0], &byte, 1) == 1 && byte != 0x0a { line.append(byte) }
        close(pipeFDs[0])
        guard let json = try? JSONParser.parse(line), let port = json["port"]?.int64Value,
              let ca = json["caFile"]?.stringValue, let key = json["keyFile"]?.stringValue,
              let team = json["teamId"]?.stringValue, let keyID = json["keyId"]?.stringValue else {
            kill(pid, SIGKILL)
            var status: Int32 = 0
            waitpid(pid, &status, 0)
            throw CLIError(.software, "the simulator did not start (it printed '\(String(decoding: line, as: UTF8.self))')")
        }
        return ChildSimulator(pid: pid, port: Int(port), managePort: Int(json["managePort"]?.int64Value ?? 0), certDirectory: certDirectory,
                              caFile: ca, keyFile: key, teamID: team, keyID: keyID, fcmServiceAccountFile: json["fcmServiceAccountFile"]?.stringValue)
    }

    /// This binary's path, read through the link rather than exec'd as `/proc/self/exe`: under
    /// valgrind (the allocation count per push) the link names the program, while exec'ing it
    /// would start valgrind's tool without its launcher.
    private static var selfPath: String {
        var buffer = [CChar](repeating: 0, count: 4096)
        let count = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        guard count > 0 else { return "/proc/self/exe" }
        return String(decoding: buffer[0..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Stops the simulator and returns the CPU seconds (user + sys) it used in all.
    @discardableResult
    func stop() -> Double {
        guard !stopped else { return 0 }
        stopped = true
        kill(pid, SIGTERM)
        var status: Int32 = 0
        var usage = rusage()
        wait4(pid, &status, 0, &usage)
        return CPUUsage.seconds(of: usage)
    }

    private var stopped = false
}

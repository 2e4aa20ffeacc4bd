#if canImport(Glibc)
import Glibc
#endif
import CHiredis

/// Where a Redis (or Valkey) server is and how long to wait for it.
public struct RedisEndpoint: Sendable, Equatable, CustomStringConvertible {
    public var host: String
    public var port: Int
    /// AUTH: a password alone (`requirepass`), or with `username` (Redis 6 ACL users).
    public var username: String?
    public var password: String?
    /// The longest a TCP connect (and the AUTH after it) may take.
    public var connectTimeout: Duration
    /// The longest one command may wait for its reply; a BLOCK adds its own time on top.
    public var commandTimeout: Duration

    public init(host: String, port: Int, username: String? = nil, password: String? = nil,
                connectTimeout: Duration = .seconds(2), commandTimeout: Duration = .seconds(2)) {
        self.host = host
        self.port = port
        self.username = username
        self.password = password
        self.connectTimeout = connectTimeout
        self.commandTimeout = commandTimeout
    }

    public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
}

/// One blocking connection to Redis on hiredis: a command is sent and its reply awaited on the
/// calling thread, at most `commandTimeout` (plus a BLOCK's time). Not shared between threads: the
/// cluster gives each of its threads its own connection.
///
/// After `.connectionLost` the connection refuses commands (with the same error) until
/// `reconnect()` succeeds; a write sent just before the loss may or may not have been applied, so
/// the callers' writes are idempotent (stream ids, fencing tokens).
public final class RedisConnection {
    public let endpoint: RedisEndpoint
    private var context: UnsafeMutablePointer<redisContext>?
    /// The error that broke the connection, repeated until `reconnect()`.
    private var broken: RedisError?

    /// Connects (and authenticates), or throws `.connectFailed` within `connectTimeout`.
    public init(_ endpoint: RedisEndpoint) throws(RedisError) {
        self.endpoint = endpoint
        Self.ignoreSIGPIPE()
        context = try Self.open(endpoint)
    }

    deinit { if let context { redisFree(context) } }

    /// Drops the connection and makes a new one (the same endpoint, AUTH again).
    public func reconnect() throws(RedisError) {
        if let context { redisFree(context) }
        context = nil
        broken = .connectFailed(endpoint: endpoint.description, message: "not connected")
        context = try Self.open(endpoint)
        broken = nil
    }

    /// Whether the last command left the connection usable.
    public var isConnected: Bool { context != nil && broken == nil }

    /// Sends one command (binary-safe arguments) and returns its reply, `.error` replies included.
    public func send(_ arguments: [RedisArgument], blocking: Duration? = nil) throws(RedisError) -> RedisReply {
        let name = Self.commandName(arguments)
        if let broken { throw broken }
        guard let context else { throw RedisError.connectionLost(command: name, message: "not connected") }
        do throws(RedisError) {
            if let blocking { try setTimeout(context, endpoint.commandTimeout + blocking) }
            let reply = try Self.withArgv(arguments) { argc, argv, lengths throws(RedisError) in
                try Hiredis.reply(name, redisCommandArgv(context, argc, argv, lengths), context)
            }
            if blocking != nil { try setTimeout(context, endpoint.commandTimeout) }
            return reply
        } catch {
            broken = error
            throw error
        }
    }

    /// Sends one command and throws its error reply as `.server`.
    @discardableResult
    public func command(_ arguments: [RedisArgument], blocking: Duration? = nil) throws(RedisError) -> RedisReply {
        let reply = try send(arguments, blocking: blocking)
        if case let .error(message) = reply { throw .server(command: Self.commandName(arguments), message: message) }
        return reply
    }

    /// PING → PONG.
    public func ping() throws(RedisError) {
        let reply = try command(["PING"])
        guard reply == .status("PONG") else { throw .unexpectedReply(command: "PING", reply: reply.description) }
    }

    // MARK: - Inside

    private func setTimeout(_ context: UnsafeMutablePointer<redisContext>, _ timeout: Duration) throws(RedisError) {
        try Hiredis.check("redisSetTimeout", redisSetTimeout(context, Self.timeval(timeout)), context)
    }

    private static func open(_ endpoint: RedisEndpoint) throws(RedisError) -> UnsafeMutablePointer<redisContext> {
        let name = endpoint.description
        let context = try Hiredis.context(name, redisConnectWithTimeout(endpoint.host, Int32(clamping: endpoint.port), timeval(endpoint.connectTimeout)))
        do throws(RedisError) {
            // hiredis 0.14 applies the connect timeout to the connect only: reads wait for the
            // command timeout (SO_RCVTIMEO/SO_SNDTIMEO), and keep-alive finds a silently dead peer.
            try Hiredis.check("redisSetTimeout", redisSetTimeout(context, timeval(endpoint.connectTimeout)), context)
            try Hiredis.check("redisEnableKeepAlive", redisEnableKeepAlive(context), context)
            if let password = endpoint.password {
                let arguments: [RedisArgument] = endpoint.username.map { ["AUTH", .text($0), .text(password)] } ?? ["AUTH", .text(password)]
                let reply = try withArgv(arguments) { argc, argv, lengths throws(RedisError) in
                    try Hiredis.reply("AUTH", redisCommandArgv(context, argc, argv, lengths), context)
                }
                if case let .error(message) = reply { throw RedisError.connectFailed(endpoint: name, message: "AUTH refused: \(message)") }
            }
            try Hiredis.check("redisSetTimeout", redisSetTimeout(context, timeval(endpoint.commandTimeout)), context)
        } catch {
            redisFree(context)
            if case let .connectionLost(_, message) = error { throw .connectFailed(endpoint: name, message: message) }
            throw error
        }
        return context
    }

    /// "XADD", or "XGROUP CREATE" for commands with a sub-command: what error messages name.
    static func commandName(_ arguments: [RedisArgument]) -> String {
        guard let first = arguments.first else { return "(empty command)" }
        let name = String(decoding: first.bytes, as: UTF8.self).uppercased()
        if ["XGROUP", "XINFO", "CLIENT", "CONFIG", "SCRIPT"].contains(name), arguments.count > 1 {
            return name + " " + String(decoding: arguments[1].bytes, as: UTF8.self).uppercased()
        }
        return name
    }

    /// The arguments as hiredis's argc/argv/argvlen, valid during `body`: one buffer holds them all.
    private static func withArgv<R>(_ arguments: [RedisArgument],
                                   _ body: (Int32, UnsafeMutablePointer<UnsafePointer<CChar>?>, UnsafePointer<Int>) throws(RedisError) -> R) throws(RedisError) -> R {
        var flat: [UInt8] = []
        var offsets: [Int] = []
        var lengths: [Int] = []
        for argument in arguments {
            offsets.append(flat.count)
            lengths.append(argument.bytes.count)
            flat.append(contentsOf: argument.bytes)
        }
        flat.append(0) // never an empty buffer: every pointer is valid, even for "" arguments
        let result: Result<R, RedisError> = flat.withUnsafeBufferPointer { buffer in
            let base = UnsafeRawPointer(buffer.baseAddress!)
            var pointers: [UnsafePointer<CChar>?] = offsets.map { (base + $0).assumingMemoryBound(to: CChar.self) }
            return pointers.withUnsafeMutableBufferPointer { argv in
                lengths.withUnsafeBufferPointer { lengthBuffer in
                    do throws(RedisError) {
                        return .success(try body(Int32(arguments.count), argv.baseAddress!, lengthBuffer.baseAddress!))
                    } catch { return .failure(error) }
                }
            }
        }
        return try result.get()
    }

    private static func timeval(_ duration: Duration) -> Glibc.timeval {
        let (seconds, attoseconds) = duration.components
        return Glibc.timeval(tv_sec: Int(max(0, seconds)), tv_usec: Int(max(0, attoseconds) / 1_000_000_000_000))
    }

    /// hiredis writes with write(2): a server gone away would raise SIGPIPE and end the process.
    /// Ignoring it (as `sokuho`'s main does) turns that into EPIPE, a `.connectionLost`.
    private static let sigpipeIgnored: Bool = {
        signal(SIGPIPE, SIG_IGN)
        return true
    }()

    private static func ignoreSIGPIPE() { _ = sigpipeIgnored }
}

/// One command argument: text or bytes, binary-safe either way. String and integer literals work.
public struct RedisArgument: Sendable, Equatable, ExpressibleByStringLiteral, ExpressibleByIntegerLiteral {
    public let bytes: [UInt8]

    public init(bytes: [UInt8]) { self.bytes = bytes }
    public init(stringLiteral value: String) { bytes = Array(value.utf8) }
    public init(integerLiteral value: Int64) { bytes = Array(String(value).utf8) }

    public static func text(_ value: String) -> RedisArgument { RedisArgument(bytes: Array(value.utf8)) }
    public static func integer(_ value: some BinaryInteger) -> RedisArgument { RedisArgument(bytes: Array(String(value).utf8)) }
    public static func data(_ value: [UInt8]) -> RedisArgument { RedisArgument(bytes: value) }
    /// Whole milliseconds (rounded up: a 0.5 ms lease must not become "0", which Redis refuses).
    public static func milliseconds(_ value: Duration) -> RedisArgument { .integer(wholeMilliseconds(value)) }
}

/// A duration in whole milliseconds, rounded up, at least 1.
func wholeMilliseconds(_ duration: Duration) -> Int64 {
    let (seconds, attoseconds) = duration.components
    let ms = seconds * 1000 + (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000
    return max(1, ms)
}

/// One RESP2 reply as a plain value (hiredis's `redisReply`, copied out and freed).
public enum RedisReply: Sendable, Equatable, CustomStringConvertible {
    /// A simple string: "OK", "PONG".
    case status(String)
    /// An error reply: "BUSYGROUP Consumer Group name already exists".
    case error(String)
    case integer(Int64)
    /// A bulk string, binary-safe.
    case bytes([UInt8])
    case array([RedisReply])
    /// A nil bulk string or nil array: a missing key, a BLOCK that timed out.
    case `nil`

    /// A bulk string or status as UTF-8 text.
    public var text: String? {
        switch self {
        case let .bytes(bytes): return String(decoding: bytes, as: UTF8.self)
        case let .status(text): return text
        default: return nil
        }
    }

    public var isNil: Bool { if case .nil = self { return true } else { return false } }

    public var description: String {
        switch self {
        case let .status(text): return "+\(text)"
        case let .error(text): return "-\(text)"
        case let .integer(value): return ":\(value)"
        case let .bytes(bytes): return "\"\(String(decoding: bytes.prefix(64), as: UTF8.self))\(bytes.count > 64 ? "…" : "")\""
        case let .array(elements): return "[" + elements.map(\.description).joined(separator: ", ") + "]"
        case .nil: return "(nil)"
        }
    }
}

/// Why a Redis command failed. Each case names the command; `isRetryable` says whether trying again
/// (after `RedisConnection.reconnect()` for the connection cases) can succeed.
public enum RedisError: Error, Sendable, Equatable, CustomStringConvertible {
    /// No connection could be made (refused, unreachable, timed out, AUTH refused): retryable later.
    case connectFailed(endpoint: String, message: String)
    /// The connection broke or timed out during `command`; the connection is unusable until
    /// `reconnect()`. Retryable — but a write may or may not have been applied.
    case connectionLost(command: String, message: String)
    /// Redis answered `command` with an error reply ("NOGROUP …", "WRONGTYPE …").
    case server(command: String, message: String)
    /// The reply had a shape the command never returns (a client bug or an unexpected server).
    case unexpectedReply(command: String, reply: String)

    public var description: String {
        switch self {
        case let .connectFailed(endpoint, message): return "cannot connect to Redis at \(endpoint): \(message)"
        case let .connectionLost(command, message): return "Redis connection lost during \(command): \(message) (reconnect and retry)"
        case let .server(command, message): return "Redis refused \(command): \(message)"
        case let .unexpectedReply(command, reply): return "unexpected Redis reply to \(command): \(reply)"
        }
    }

    /// The first word of a server error ("NOGROUP", "BUSYGROUP", "LOADING"), nil for other cases.
    public var serverCode: String? {
        guard case let .server(_, message) = self else { return nil }
        return message.split(separator: " ", maxSplits: 1).first.map(String.init)
    }

    /// Connection failures, and server errors that say "not now": a server loading its data set,
    /// running a slow script, or a replica that cannot take writes yet.
    public var isRetryable: Bool {
        switch self {
        case .connectFailed, .connectionLost: return true
        case .server: return ["LOADING", "BUSY", "TRYAGAIN", "MASTERDOWN", "READONLY", "CLUSTERDOWN"].contains(serverCode ?? "")
        case .unexpectedReply: return false
        }
    }

    /// Whether the connection must be re-made before the next command.
    public var needsReconnect: Bool {
        switch self {
        case .connectFailed, .connectionLost: return true
        case .server(_, _), .unexpectedReply: return false
        }
    }
}

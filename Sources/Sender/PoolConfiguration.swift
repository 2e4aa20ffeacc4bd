import Crypto
import HTTP2

/// How a connection pool talks to one APNs endpoint (one team, environment and key: APNs binds a
/// connection to those on its first push).
public struct PoolConfiguration: Sendable {
    public var host: String
    public var port: Int
    public var tls: TLSConfiguration
    /// The TLS name to verify when it is not `host` (e.g. connecting by address).
    public var serverName: String?
    /// Connections in all (spread over the loop threads), opened lazily, kept open.
    public var connections = 4
    /// Event-loop threads; each owns its share of the connections.
    public var threads = max(1, min(Int(SystemInfo.cores), 4))
    /// Our cap on streams per connection (the server's SETTINGS may lower it).
    public var streamsPerConnection = 1000
    /// Per-request deadline once sent (the push's group deadline may be earlier).
    public var requestTimeout: UInt64 = 30_000_000_000
    /// Provider tokens (nil: no authorization header, e.g. a plain HTTP/2 benchmark target).
    public var providerTokens: ProviderTokenSource?
    public var retry = RetryPolicy()
    /// Jobs buffered per loop thread before producers wait.
    public var queueCapacity = 16_384
    /// Reconnect back-off after a failure: doubles from `reconnectInitial` to `reconnectMaximum`.
    public var reconnectInitial: UInt64 = 1_000_000_000
    public var reconnectMaximum: UInt64 = 60_000_000_000
    /// Consecutive failed connection attempts, with no connection ever opened, before the pool gives
    /// up and fails the pushes (an unreachable server or a TLS mismatch is a configuration error).
    public var failFastAfterAttempts = 3

    public init(host: String, port: Int, tls: TLSConfiguration) {
        self.host = host
        self.port = port
        self.tls = tls
    }
}

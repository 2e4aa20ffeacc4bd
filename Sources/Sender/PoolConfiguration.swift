import Crypto
import HTTP2
import IO

/// How a connection pool talks to one endpoint: APNs (one team, environment and key: APNs binds a
/// connection to those on its first push) or FCM (one project).
public struct PoolConfiguration: Sendable {
    /// The host the pool sends to; the next six are shorthands for its members.
    public var endpoint: ProviderEndpoint
    public var host: String { get { endpoint.host } set { endpoint.host = newValue } }
    public var port: Int { get { endpoint.port } set { endpoint.port = newValue } }
    public var tls: TLSConfiguration { get { endpoint.tls } set { endpoint.tls = newValue } }
    public var serverName: String? { get { endpoint.serverName } set { endpoint.serverName = newValue } }
    public var connectTimeout: Duration { get { endpoint.connectTimeout } set { endpoint.connectTimeout = newValue } }
    public var resolver: NameResolver? { get { endpoint.resolver } set { endpoint.resolver = newValue } }
    /// Connections in all (spread over the loop threads), opened lazily, kept open.
    public var connections = 4
    /// Event-loop threads; each owns its share of the connections.
    public var threads = max(1, min(Int(SystemInfo.cores), 4))
    /// Our cap on streams per connection (the server's SETTINGS may lower it).
    public var streamsPerConnection = 1000
    /// Per-request deadline once sent (the push's group deadline may be earlier).
    public var requestTimeout: Duration = .seconds(30)
    /// APNs (the default) or FCM with its access tokens: how requests are authorized and answers judged.
    public var provider: PushProvider = .apns
    /// APNs provider tokens (nil: no authorization header, e.g. a plain HTTP/2 benchmark target).
    /// Not read for FCM, whose access tokens come with `provider`.
    public var providerTokens: ProviderTokenSource?
    public var retry = RetryPolicy()
    /// Jobs buffered per loop thread before producers wait.
    public var queueCapacity = 16_384
    /// Reconnect back-off after a failure: doubles from `reconnectInitial` to `reconnectMaximum`.
    public var reconnectInitial: Duration = .seconds(1)
    public var reconnectMaximum: Duration = .seconds(60)
    /// Failed connection attempts in a row, per connection, before that connection counts as unable
    /// to reach the server. The pool gives up and fails the pushes only when every one of its
    /// connections has, and none ever opened (an unreachable server or a TLS mismatch is a
    /// configuration error). With the 1 s → 2 s back-off, a DNS or network blip shorter than about
    /// 3 s is retried, not fatal. After a connection has opened, an outage is waited out until the
    /// pushes' deadlines instead.
    public var failFastAfterAttempts = 3
    /// Dead-connection detection: while streams are in flight and nothing has arrived for
    /// `pingAfterSilence`, a PING; no answer within `pingTimeout` retires the connection.
    public var pingAfterSilence: Duration? = .seconds(2)
    public var pingTimeout: Duration = .seconds(2)
    /// Keep the connections open while there is no work (the daemon's warm pool): open them at
    /// once, reconnect with back-off when they drop, and PING an idle one every `keepalive` so a
    /// NAT does not forget it. Off: connections open when work arrives (the CLI commands).
    public var keepWarm = false
    public var keepalive: Duration = .seconds(300)
    /// With `keepWarm`: open nothing until the first work arrives, then keep warm. The channel
    /// host's connection: most apps never manage a channel, those that do, do it again.
    public var warmOnceUsed = false
    /// Whether outcomes carry each response's `apns-id` and `apns-unique-id` (a delivery audit log
    /// wants them; they cost two strings per push, so they are off unless asked for).
    public var keepsResponseIDs = false
    /// Requests a minute the pool writes, every loop together, retries and errors included (an
    /// FCM project's quota); nil: no limit (APNs has none, and `bench` measures without one).
    public var messagesPerMinute: Int?

    public init(endpoint: ProviderEndpoint) { self.endpoint = endpoint }

    public init(host: String, port: Int, tls: TLSConfiguration) { self.init(endpoint: ProviderEndpoint(host: host, port: port, tls: tls)) }
}

extension PoolConfiguration {
    /// An FCM pool as an event's Android lane uses it, sized for FCM rather than for APNs: one
    /// loop thread (a project's default quota is 10,000 messages a second, half of what one loop
    /// sends), 250 streams per connection (FCM advertises about 100; more is never granted), and
    /// a 1,024-job queue (the fan-out hands Android starts out a gate's batch at a time, at most
    /// 250 at the default 4 connections; updates wait for room). The rings a loop preallocates
    /// scale with these, so the second pool costs about 1 MB instead of APNs' 24 MB: an event
    /// with Android phones stays near an APNs-only event's memory (README, "Android").
    public static func fcm(host: String, port: Int, tls: TLSConfiguration, tokens: FCMAccessTokenSource) -> PoolConfiguration {
        var pool = PoolConfiguration(host: host, port: port, tls: tls)
        pool.provider = .fcm(tokens)
        pool.threads = 1
        pool.streamsPerConnection = 250
        pool.queueCapacity = 1024
        return pool
    }
}

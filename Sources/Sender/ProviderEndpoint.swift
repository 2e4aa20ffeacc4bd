import Crypto
import HTTP2
import IO

/// One provider host as a pool reaches it: where it is, the TLS that verifies it (and the name to
/// verify when it is not `host`), how long a connect may take and how the name resolves. The push
/// host and the channel-management host are one value each; the connections are made from it
/// (`connectionOptions`), and nothing else converts between them.
public struct ProviderEndpoint: Sendable {
    public var host: String
    public var port: Int
    public var tls: TLSConfiguration
    /// The TLS name to verify when it is not `host` (e.g. connecting by address).
    public var serverName: String?
    /// Each address's connect (and the lookup and the TLS handshake) gets this long.
    public var connectTimeout: Duration = .seconds(10)
    /// How the host name becomes addresses (tests inject failures and addresses here).
    public var resolver: NameResolver?

    public init(host: String, port: Int, tls: TLSConfiguration) {
        self.host = host
        self.port = port
        self.tls = tls
    }

    /// The connection-level options for this endpoint (the rest are the pool's to set).
    var connectionOptions: ClientConnectionOptions {
        var options = ClientConnectionOptions(host: host, port: port, tls: tls)
        options.serverName = serverName
        options.connectTimeout = connectTimeout
        if let resolver { options.resolver = resolver }
        return options
    }
}

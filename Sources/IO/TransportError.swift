#if canImport(Glibc)
import Glibc
#endif

/// Why a connection could not be made or was lost. Messages name the host and what to check.
public enum TransportError: Error, Sendable, Equatable, CustomStringConvertible {
    case resolve(host: String, message: String)
    case socket(String, Int32)
    case connect(String, Int32)
    case bind(String, Int32)
    case timeout(String)
    case tls(String)
    case alpn(String)
    case protocolError(String)
    case closed(String)

    public var description: String {
        switch self {
        case let .resolve(host, message): return "cannot resolve \(host): \(message)"
        case let .socket(call, error): return "\(call) failed: \(String(cString: strerror(error)))"
        case let .connect(address, error): return "cannot connect to \(address): \(String(cString: strerror(error)))"
        case let .bind(address, error): return "cannot listen on \(address): \(String(cString: strerror(error)))"
        case let .timeout(what): return "timed out: \(what)"
        case let .tls(message): return "TLS failed: \(message)"
        case let .alpn(message): return "the server does not speak HTTP/2 over TLS (ALPN h2): \(message)"
        case let .protocolError(message): return "HTTP/2 protocol error: \(message)"
        case let .closed(message): return "connection closed: \(message)"
        }
    }
}

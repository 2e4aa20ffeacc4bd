#if canImport(Glibc)
import Glibc
#endif

/// Why a server could not start. Each case names the address or the libevent call.
public enum HTTPServerError: Error, Sendable, Equatable, CustomStringConvertible {
    /// `host` is neither an IP address nor a name that resolves.
    case address(host: String, message: String)
    /// The address could not be bound or listened on (errno: EADDRINUSE, EADDRNOTAVAIL, EACCES…).
    case bind(address: String, errno: Int32)
    /// A libevent set-up call failed (out of memory, or no usable event backend).
    case libevent(call: String)
    /// `listen` was empty: a server must listen somewhere.
    case noAddress

    public var description: String {
        switch self {
        case let .address(host, message): return "cannot listen on '\(host)': \(message)"
        case let .bind(address, code): return "cannot listen on \(address): \(String(cString: strerror(code)))"
        case let .libevent(call): return "libevent: \(call) failed"
        case .noAddress: return "no address to listen on"
        }
    }
}

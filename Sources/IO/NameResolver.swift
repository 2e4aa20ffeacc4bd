#if canImport(Glibc)
import Glibc
#endif

/// How a connection turns `host:port` into addresses. The default is an uncached `getaddrinfo`
/// (APNs asks for a fresh lookup per new connection); tests inject failures (a DNS blip) or
/// addresses (one that drops packets) through it.
public typealias NameResolver = @Sendable (_ host: String, _ port: Int) throws(TransportError) -> [SocketAddress]

public enum NameResolution {
    /// Runs `resolver` on a short-lived detached thread and hands the result to `loop`: getaddrinfo
    /// blocks for as long as the DNS server takes, and a loop thread carries every other connection
    /// of its share. A thread per lookup is cheap next to what follows it (TCP + TLS), and lookups
    /// happen only when a connection opens.
    public static func start(host: String, port: Int, resolver: @escaping NameResolver, on loop: EventLoop,
                      completion: @escaping @Sendable (Result<[SocketAddress], TransportError>) -> Void) {
        OSThread.startDetached(name: "sokuho-resolve") {
            let result: Result<[SocketAddress], TransportError>
            do throws(TransportError) {
                let addresses = try resolver(host, port)
                result = addresses.isEmpty ? .failure(.resolve(host: host, message: "no address")) : .success(addresses)
            } catch {
                result = .failure(error)
            }
            loop.execute { completion(result) }
        }
    }

    /// RFC 8305 §4: alternate address families, starting with the resolver's first choice, so an
    /// address family that drops packets delays the other by one head start, not by a whole timeout.
    public static func interleaved(_ addresses: [SocketAddress]) -> [SocketAddress] {
        guard let first = addresses.first else { return [] }
        let preferred = addresses.filter { $0.family == first.family }
        let other = addresses.filter { $0.family != first.family }
        var out: [SocketAddress] = []
        out.reserveCapacity(addresses.count)
        for index in 0..<max(preferred.count, other.count) {
            if index < preferred.count { out.append(preferred[index]) }
            if index < other.count { out.append(other[index]) }
        }
        return out
    }
}

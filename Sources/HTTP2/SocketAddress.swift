#if canImport(Glibc)
import Glibc
#endif
import CSystem
import Crypto

/// A resolved socket address (IPv4 or IPv6), copied out of getaddrinfo's list.
public struct SocketAddress: Sendable, CustomStringConvertible {
    var storage: sockaddr_storage
    var length: socklen_t

    public var family: Int32 { Int32(storage.ss_family) }

    /// Every address of `host:port` for a TCP connection, in the resolver's order. Uncached:
    /// APNs asks for a fresh lookup per new connection so load spreads over its servers.
    public static func resolve(host: String, port: Int) throws(TransportError) -> [SocketAddress] {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_family = AF_UNSPEC
        var list: UnsafeMutablePointer<addrinfo>?
        let rc = getaddrinfo(host, String(port), &hints, &list)
        guard rc == 0, let first = list else {
            throw .resolve(host: host, message: String(cString: gai_strerror(rc)))
        }
        defer { freeaddrinfo(list) }
        var out: [SocketAddress] = []
        var cursor: UnsafeMutablePointer<addrinfo>? = first
        while let entry = cursor {
            var storage = sockaddr_storage()
            withUnsafeMutableBytes(of: &storage) { raw in
                raw.copyMemory(from: UnsafeRawBufferPointer(start: entry.pointee.ai_addr, count: Int(entry.pointee.ai_addrlen)))
            }
            out.append(SocketAddress(storage: storage, length: entry.pointee.ai_addrlen))
            cursor = entry.pointee.ai_next
        }
        return out
    }

    /// "127.0.0.1:443" or "[::1]:443".
    public var description: String {
        var host = [CChar](repeating: 0, count: Int(NI_MAXHOST))
        var service = [CChar](repeating: 0, count: Int(NI_MAXSERV))
        var copy = storage
        let rc = withUnsafePointer(to: &copy) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                getnameinfo($0, length, &host, socklen_t(host.count), &service, socklen_t(service.count), NI_NUMERICHOST | NI_NUMERICSERV)
            }
        }
        guard rc == 0 else { return "?" }
        let h = CStringBuffer.string(host), s = CStringBuffer.string(service)
        return family == AF_INET6 ? "[\(h)]:\(s)" : "\(h):\(s)"
    }

    /// The port number.
    public var port: Int {
        var copy = storage
        return withUnsafePointer(to: &copy) { pointer in
            if family == AF_INET6 {
                return pointer.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { Int(UInt16(bigEndian: $0.pointee.sin6_port)) }
            }
            return pointer.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { Int(UInt16(bigEndian: $0.pointee.sin_port)) }
        }
    }
}

/// Thin wrappers over the socket calls a connection needs, all non-blocking.
enum Socket {
    /// A non-blocking TCP socket whose connect to `address` is under way (or done).
    static func startConnect(to address: SocketAddress) throws(TransportError) -> Int32 {
        let fd = socket(address.family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw .socket("socket", errno) }
        setNoDelay(fd)
        var storage = address.storage
        let rc = withUnsafePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, address.length) }
        }
        if rc != 0 && errno != EINPROGRESS {
            let error = errno
            close(fd)
            throw .connect(address.description, error)
        }
        return fd
    }

    /// The pending error of a non-blocking connect (0 when it succeeded). A failing `getsockopt`
    /// is itself the error: reading it as 0 would call a socket that never connected a success.
    static func pendingError(_ fd: Int32) -> Int32 {
        var error: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        guard getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length) == 0 else { return errno == 0 ? EIO : errno }
        return error
    }

    /// TCP_NODELAY: HTTP/2 frames are coalesced by us, so Nagle only adds latency.
    static func setNoDelay(_ fd: Int32) {
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
    }

    /// A non-blocking listening socket bound to `host:port` (port 0 picks a free one).
    /// With `reusePort`, several listeners (one per loop thread) can share the port (SO_REUSEPORT):
    /// the kernel spreads new connections over them.
    static func listen(host: String, port: Int, reusePort: Bool = false, backlog: Int32 = 1024) throws(TransportError) -> (fd: Int32, address: SocketAddress) {
        let addresses = try SocketAddress.resolve(host: host, port: port)
        guard let address = addresses.first else { throw .resolve(host: host, message: "no address") }
        let fd = socket(address.family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw .socket("socket", errno) }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        if reusePort { setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, socklen_t(MemoryLayout<Int32>.size)) }
        var storage = address.storage
        let bound = withUnsafePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, address.length) }
        }
        guard bound == 0 else { let e = errno; close(fd); throw .bind("\(address)", e) }
        guard Glibc.listen(fd, backlog) == 0 else { let e = errno; close(fd); throw .socket("listen", e) }
        var actual = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        _ = withUnsafeMutablePointer(to: &actual) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return (fd, SocketAddress(storage: actual, length: length))
    }
}

#if canImport(Glibc)
import Glibc
#endif
import CSystem

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
        let h = Self.string(host), s = Self.string(service)
        return family == AF_INET6 ? "[\(h)]:\(s)" : "\(h):\(s)"
    }

    private static func string(_ buffer: [CChar]) -> String {
        String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
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

/// The socket calls a connection and a listener need, all non-blocking and all checked.
public enum Socket {
    /// A non-blocking TCP socket whose connect to `address` is under way (or done).
    public static func startConnect(to address: SocketAddress) throws(TransportError) -> FileDescriptor {
        let fd = FileDescriptor(adopting: try Syscall.check("socket") {
            socket(address.family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        })
        try setNoDelay(fd.rawValue)
        var storage = address.storage
        let raw = fd.rawValue
        do throws(TransportError) {
            try Syscall.check("connect") {
                let rc = withUnsafePointer(to: &storage) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(raw, $0, address.length) }
                }
                return rc != 0 && errno == EINPROGRESS ? 0 : rc
            }
        } catch {
            if case let .socket(_, code) = error { throw .connect(address.description, code) }
            throw error
        }
        return fd
    }

    /// The pending error of a non-blocking connect (0 when it succeeded). A failing `getsockopt`
    /// is itself the error: reading it as 0 would call a socket that never connected a success.
    public static func pendingError(_ fd: Int32) -> Int32 {
        var error: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        do throws(TransportError) {
            try Syscall.check("getsockopt(SO_ERROR)") { getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length) }
        } catch {
            if case let .socket(_, code) = error { return code }
            return EIO
        }
        return error
    }

    /// TCP_NODELAY: HTTP/2 frames are coalesced by us, so Nagle only adds latency.
    public static func setNoDelay(_ fd: Int32) throws(TransportError) {
        var one: Int32 = 1
        try Syscall.check("setsockopt(TCP_NODELAY)") { setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size)) }
    }

    /// A non-blocking listening socket bound to `host:port` (port 0 picks a free one).
    /// With `reusePort`, several listeners (one per loop thread) can share the port (SO_REUSEPORT):
    /// the kernel spreads new connections over them.
    public static func listen(host: String, port: Int, reusePort: Bool = false,
                              backlog: Int32 = 1024) throws(TransportError) -> Listener {
        let addresses = try SocketAddress.resolve(host: host, port: port)
        guard let address = addresses.first else { throw .resolve(host: host, message: "no address") }
        let fd = FileDescriptor(adopting: try Syscall.check("socket") {
            socket(address.family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        })
        let raw = fd.rawValue
        var one: Int32 = 1
        try Syscall.check("setsockopt(SO_REUSEADDR)") { setsockopt(raw, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size)) }
        if reusePort {
            try Syscall.check("setsockopt(SO_REUSEPORT)") { setsockopt(raw, SOL_SOCKET, SO_REUSEPORT, &one, socklen_t(MemoryLayout<Int32>.size)) }
        }
        var storage = address.storage
        do throws(TransportError) {
            try Syscall.check("bind") {
                withUnsafePointer(to: &storage) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(raw, $0, address.length) } }
            }
        } catch {
            if case let .socket(_, code) = error { throw .bind("\(address)", code) }
            throw error
        }
        try Syscall.check("listen") { Glibc.listen(raw, backlog) }
        var actual = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        try Syscall.check("getsockname") {
            withUnsafeMutablePointer(to: &actual) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(raw, $0, &length) } }
        }
        return Listener(descriptor: fd, address: SocketAddress(storage: actual, length: length))
    }

    /// A bound, listening socket and the address it got.
    public struct Listener: ~Copyable {
        public let descriptor: FileDescriptor
        public let address: SocketAddress

        /// Hands the socket to a new owner that closes it (libevent's evhttp); the address stays known
        /// to whoever read it first.
        public consuming func releaseDescriptor() -> Int32 { descriptor.release() }
    }

    /// The next connection waiting on `listener`, non-blocking, close-on-exec and without Nagle;
    /// nil when none is waiting.
    public static func accept(_ listener: Int32) throws(TransportError) -> FileDescriptor? {
        while true {
            let fd = Glibc.accept(listener, nil, nil)
            if fd >= 0 {
                let descriptor = FileDescriptor(adopting: fd)
                let raw = descriptor.rawValue
                let flags = try Syscall.check("fcntl(F_GETFL)") { fcntl(raw, F_GETFL) }
                try Syscall.check("fcntl(F_SETFL)") { fcntl(raw, F_SETFL, flags | O_NONBLOCK) }
                try Syscall.check("fcntl(F_SETFD)") { fcntl(raw, F_SETFD, FD_CLOEXEC) }
                try setNoDelay(raw)
                return descriptor
            }
            switch errno {
            case EINTR, ECONNABORTED: continue  // a client that gave up while queued is not our failure
            case EAGAIN, EWOULDBLOCK: return nil
            default: throw .socket("accept", errno)
            }
        }
    }
}

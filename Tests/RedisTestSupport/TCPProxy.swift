import Glibc

/// A loopback TCP proxy in front of a server, for partitions: `cut()` makes it a black hole (it
/// stops forwarding in both directions and holds the connections open, as a dead network path
/// does — nothing is refused or reset), `cutReplies()` forwards requests but holds the server's
/// answers (a command applied whose reply is lost), `refuse()` also closes the listening socket (a
/// new connection is refused: the server is down as far as clients can tell), `heal()` listens and
/// forwards again. One thread per direction per connection; the test's traffic is small.
public final class TCPProxy: @unchecked Sendable {
    // @unchecked: the flags and `listener` are read by the threads under `lock`.
    public let port: Int
    private let target: Int
    private var listener: Int32 = -1
    private var lock = pthread_mutex_t()
    private var cutFlag = false
    private var repliesCutFlag = false
    private var closing = false

    public init(to targetPort: Int) throws {
        target = targetPort
        port = try freePort()
        pthread_mutex_init(&lock, nil)
        listener = try Self.listen(on: port)
        Self.thread { [self] in acceptLoop() }
    }

    private static func listen(on port: Int) throws -> Int32 {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var yes: Int32 = 1
        setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        var address = Self.loopback(port)
        let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        guard bound == 0, Glibc.listen(listener, 64) == 0 else {
            Glibc.close(listener)
            throw RedisServerFixture.StartFailed(description: "proxy cannot listen on \(port)")
        }
        return listener
    }

    /// Stops forwarding: a partition.
    public func cut() { locked { cutFlag = true } }
    /// Forwards what clients send, holds what the server answers.
    public func cutReplies() { locked { repliesCutFlag = true } }
    /// Cuts, and refuses new connections.
    public func refuse() {
        locked {
            cutFlag = true
            if listener >= 0 { shutdown(listener, Int32(SHUT_RDWR)); Glibc.close(listener); listener = -1 }
        }
    }
    /// Listens (if refusing) and forwards again.
    public func heal() {
        locked {
            if listener < 0 { listener = (try? Self.listen(on: port)) ?? -1 }
            cutFlag = false
            repliesCutFlag = false
        }
    }

    public func close() {
        locked {
            closing = true
            if listener >= 0 { shutdown(listener, Int32(SHUT_RDWR)); Glibc.close(listener); listener = -1 }
        }
    }

    private func isCut(replies: Bool) -> Bool { locked { cutFlag || (replies && repliesCutFlag) } }
    private var isClosing: Bool { locked { closing } }

    private func locked<T>(_ body: () -> T) -> T {
        pthread_mutex_lock(&lock)
        defer { pthread_mutex_unlock(&lock) }
        return body()
    }

    private func acceptLoop() {
        while !isClosing {
            let listening = locked { listener }
            guard listening >= 0 else { usleep(20_000); continue }
            let client = accept(listening, nil, nil)
            guard client >= 0 else { if isClosing { return }; usleep(1_000); continue }
            let server = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var address = Self.loopback(target)
            let connected = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(server, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
            guard connected == 0 else { Glibc.close(client); Glibc.close(server); continue }
            Self.thread { [self] in pump(from: client, to: server, replies: false) }
            Self.thread { [self] in pump(from: server, to: client, replies: true) }
        }
    }

    /// Copies bytes until either side closes; while cut, reads nothing and holds what it has.
    private func pump(from source: Int32, to destination: Int32, replies: Bool) {
        var buffer = [UInt8](repeating: 0, count: 16_384)
        defer { shutdown(source, Int32(SHUT_RDWR)); shutdown(destination, Int32(SHUT_RDWR)) }
        while !isClosing {
            if isCut(replies: replies) { usleep(20_000); continue }
            var poller = pollfd(fd: source, events: Int16(POLLIN), revents: 0)
            guard poll(&poller, 1, 50) >= 0 else { return }
            guard poller.revents != 0, !isCut(replies: replies) else { continue }
            let count = read(source, &buffer, buffer.count)
            guard count > 0 else { return }
            var sent = 0
            while sent < count {
                let wrote = buffer.withUnsafeBytes { write(destination, $0.baseAddress! + sent, count - sent) }
                guard wrote > 0 else { return }
                sent += wrote
            }
        }
    }

    private static func loopback(_ port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        return address
    }

    private static func thread(_ body: @escaping () -> Void) {
        final class Box { let body: () -> Void; init(_ body: @escaping () -> Void) { self.body = body } }
        var handle = pthread_t()
        let box = Unmanaged.passRetained(Box(body)).toOpaque()
        pthread_create(&handle, nil, { raw in
            let box = Unmanaged<Box>.fromOpaque(raw!).takeRetainedValue()
            box.body()
            return nil
        }, box)
        pthread_detach(handle)
    }
}

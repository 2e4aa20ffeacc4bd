#if canImport(Glibc)
import Glibc
#endif

/// A plain TCP connection for what curl will not send: malformed requests, half-sent ones, idle ones.
final class RawClient {
    let fd: Int32
    /// Whether the server closed the connection (rather than `readUntilClosed` timing out).
    private(set) var closed = false

    init(port: Int) {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        precondition(fd >= 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = UInt32(0x7f00_0001).bigEndian
        let rc = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        precondition(rc == 0, "connect: \(String(cString: strerror(errno)))")
    }

    deinit { close(fd) }

    func send(_ text: String) {
        let bytes = Array(text.utf8)
        var sent = 0
        while sent < bytes.count {
            let n = bytes[sent...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            precondition(n > 0, "send: \(String(cString: strerror(errno)))")
            sent += n
        }
    }

    /// Whether the server has sent something (or closed) within `milliseconds`.
    func answered(within milliseconds: Int32) -> Bool {
        var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        return poll(&poller, 1, milliseconds) > 0
    }

    /// Everything the server sends until it closes the connection (or `seconds` pass without data).
    func readUntilClosed(seconds: Int32 = 10) -> String {
        let (text, closed) = readToEnd(fd, timeout: seconds)
        self.closed = closed
        return text
    }
}

#if canImport(Glibc)
import Glibc
#endif

/// One HTTP/1.1 request to a port on 127.0.0.1 with `Connection: close`, on a blocking socket:
/// what `sokuho bench serve` submits events with, so the measured time is the daemon's, not a
/// client library's or a spawned curl's.
enum LoopbackHTTP {
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    /// The status and body of the answer.
    static func request(port: Int, method: String, path: String, headers: [(String, String)] = [],
                        body: [UInt8] = []) throws(Failure) -> (status: Int, body: [UInt8]) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw Failure(description: "socket: \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = in_addr_t(UInt32(0x7f00_0001).bigEndian)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { throw Failure(description: "connect 127.0.0.1:\(port): \(String(cString: strerror(errno)))") }
        var head = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\nContent-Length: \(body.count)\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        let request = Array((head + "\r\n").utf8) + body
        var sent = 0
        while sent < request.count {
            let count = request[sent...].withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { throw Failure(description: "write: \(String(cString: strerror(errno)))") }
            sent += count
        }
        var answer: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16_384)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            guard count >= 0 else { throw Failure(description: "read: \(String(cString: strerror(errno)))") }
            if count == 0 { break }
            answer += chunk[..<count]
        }
        // "HTTP/1.1 202 Accepted\r\n…\r\n\r\nbody"
        guard answer.count >= 12, let status = Int(String(decoding: answer[9..<12], as: UTF8.self)) else {
            throw Failure(description: "no HTTP status line in the answer")
        }
        let separator: [UInt8] = [13, 10, 13, 10]
        let start = (0...(max(0, answer.count - 4))).first { answer[$0..<min(answer.count, $0 + 4)].elementsEqual(separator) }.map { $0 + 4 } ?? answer.count
        return (status, Array(answer[start...]))
    }
}

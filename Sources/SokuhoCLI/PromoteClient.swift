#if canImport(Glibc)
import Glibc
#endif
import APNs
import Daemon
import DaemonConfiguration
import Runtime
import JSONCore

/// `sokuho serve --promote --config FILE`: asks the standby running with that configuration to
/// become the primary, over its own API (`POST /v1/promote` on the first listen address, with the
/// admin token from `adminTokenFile`). Plain HTTP/1.1 on a socket: the API is local.
enum PromoteClient {
    static func promote(_ configuration: ServeConfiguration, invocation: Invocation) throws(CLIError) -> ExitCode {
        guard let listen = configuration.listen.first else { throw CLIError(.config, "listen: no address to reach the daemon at") }
        guard listen.port != 0 else {
            throw CLIError(.config, "listen: \(listen) picks a free port, so --promote cannot know it; give the daemon's address with --listen HOST:PORT")
        }
        let token: [UInt8]
        do { token = try Service.adminToken(fromFile: configuration.adminTokenFile) } catch {
            throw CLIError(.config, error.description)
        }
        // A wildcard listener is reached on loopback.
        let host = listen.host == "0.0.0.0" || listen.host.isEmpty ? "127.0.0.1" : listen.host == "::" ? "::1" : listen.host
        let address = Endpoint(host: host, port: listen.port).description
        let answer: (status: Int, body: String)
        do { answer = try post(host: host, port: listen.port, path: "/v1/promote", token: token) } catch {
            throw CLIError(.unavailable, "no daemon answered at \(address) (\(error.message)); is sokuho serve running with this configuration? (systemctl status sokuho)")
        }
        guard answer.status == 200 else {
            throw CLIError(.refused, "the daemon at \(address) answered \(answer.status): \(answer.body)")
        }
        invocation.console.print(answer.body)
        return .success
    }

    struct Failure: Error { let message: String }

    /// One request, `Connection: close`; the status and the body.
    static func post(host: String, port: Int, path: String, token: [UInt8]) throws(Failure) -> (status: Int, body: String) {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        let resolved = getaddrinfo(host, String(port), &hints, &list)
        guard resolved == 0, let first = list else { throw Failure(message: "cannot resolve \(host): \(String(cString: gai_strerror(resolved)))") }
        defer { freeaddrinfo(list) }
        let fd = socket(first.pointee.ai_family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw Failure(message: String(cString: strerror(errno))) }
        defer { _ = close(fd) }
        var timeout = timeval(tv_sec: 120, tv_usec: 0) // a promotion may apply a large backup first
        _ = setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        guard connect(fd, first.pointee.ai_addr, first.pointee.ai_addrlen) == 0 else { throw Failure(message: String(cString: strerror(errno))) }
        let request = Array("POST \(path) HTTP/1.1\r\nHost: \(host)\r\nAuthorization: Bearer ".utf8) + token
            + Array("\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".utf8)
        var sent = 0
        while sent < request.count {
            let result = request.withUnsafeBytes { send(fd, $0.baseAddress! + sent, request.count - sent, Int32(MSG_NOSIGNAL)) }
            if result < 0 { if errno == EINTR { continue }; throw Failure(message: String(cString: strerror(errno))) }
            sent += result
        }
        var response: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count < 0 { if errno == EINTR { continue }; throw Failure(message: String(cString: strerror(errno))) }
            if count == 0 { break }
            response += buffer[..<count]
        }
        let text = String(decoding: response, as: UTF8.self)
        guard text.hasPrefix("HTTP/1."), let status = Int(text.dropFirst(9).prefix(3)) else { throw Failure(message: "not an HTTP answer") }
        var split = 0
        while split + 3 < response.count, response[split..<split + 4] != [13, 10, 13, 10] { split += 1 }
        let body = split + 4 <= response.count ? String(decoding: response[(split + 4)...], as: UTF8.self) : ""
        return (status, body.trimmingSuffixNewline)
    }
}

private extension String {
    var trimmingSuffixNewline: String { hasSuffix("\n") ? String(dropLast()) : self }
}

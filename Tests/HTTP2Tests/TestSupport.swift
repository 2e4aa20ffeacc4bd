import Crypto
import HTTP2
import IO
#if canImport(Glibc)
import Glibc
#endif

/// A fresh temporary directory.
func temporaryDirectory(_ prefix: String = "sokuho-test") -> String {
    var template = Array("/tmp/\(prefix)-XXXXXX".utf8CString)
    return template.withUnsafeMutableBufferPointer { String(cString: mkdtemp($0.baseAddress!)!) }
}

/// A CA and a server certificate for localhost/127.0.0.1/::1, made the way the simulator makes them
/// (`LoopbackCertificates`; CryptoTests checks them with openssl), so these tests also prove that an
/// mbedTLS client trusts them over a real handshake.
func makeTestCertificates() -> (dir: String, ca: String, cert: String, key: String) {
    let dir = temporaryDirectory("sokuho-certs")
    do {
        let files = try LoopbackCertificates.generate(in: dir)
        return (dir, files.caCertificatePath, files.serverCertificatePath, files.serverKeyPath)
    } catch {
        preconditionFailure("cannot make test certificates: \(error)")
    }
}

/// Runs an HTTP/2 server with `handler` on its own loop thread for the duration of `body`.
func withServer<T>(tls: TLSConfiguration, handler: HTTP2RequestHandler, maximumStreams: UInt32 = 100, name: String = "test-server",
                   _ body: (HTTP2Server) throws -> T) throws -> T {
    let loop = try EventLoop(name: name)
    let server = try HTTP2Server(loop: loop, host: "127.0.0.1", port: 0, tls: tls, handler: handler, maximumStreams: maximumStreams)
    loop.execute { server.start() }
    let thread = loop.start()
    defer {
        loop.execute { server.stop() }
        loop.stop()
        thread.join()
    }
    return try body(server)
}

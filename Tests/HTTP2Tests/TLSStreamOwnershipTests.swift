#if canImport(Glibc)
import Glibc
#endif
import Crypto
@testable import HTTP2
import HTTP2TestSupport
import IO
import Testing

/// Who closes a socket when a TLS stream cannot be set up. The bug: TLSStream set the fd before
/// mbedtls_ssl_set_hostname, so on that failure its deinit closed the fd and then the connection
/// closed it again — with several threads, possibly another connection's freshly opened fd.
@Suite(.serialized) struct TLSStreamOwnershipTests {
    @Test("A TLSStream that cannot be set up leaves the fd to its caller, open, so it is closed exactly once")
    func failedSetupDoesNotCloseTheFD() throws {
        let fd = open("/dev/null", O_RDONLY)
        try #require(fd >= 0)
        let longName = String(repeating: "a", count: 256)
        #expect {
            _ = try TLSStream(fd: fd, configuration: try TLSConfiguration.client(caFile: nil), serverName: longName)
        } throws: { error in
            (error as? TLSError)?.message.contains("the server name is 256 bytes long") == true
        }
        #expect(fcntl(fd, F_GETFD) != -1, "TLSStream closed an fd it did not own yet")
        #expect(close(fd) == 0)
    }

    @Test("A 256-byte --server-name fails the connection with an error naming the limit and --server-name, and no later close hits a reused fd number")
    func longServerNameFailsClearly() throws {
        let transport = TransportTests()
        try transport.withServer { port, _ in
            var options = try transport.options(port: port)
            options.serverName = String(repeating: "b", count: 256)
            let result = OneShotClient.perform([ClientRequest(method: "GET", path: "/", headers: [])], options: options, authorization: nil)
            guard case let .failure(error) = result else { Issue.record("a 256-byte server name must fail"); return }
            #expect(error.description.contains("the server name is 256 bytes long, and a TLS server name has at most 255"), "\(error)")
            #expect(error.description.contains("--server-name"))
            // The failed connection's socket number is free again; a file opened on it now must
            // survive another such failure (nothing closes a number it no longer owns).
            let fd = open("/dev/null", O_RDONLY)
            try #require(fd >= 0)
            _ = OneShotClient.perform([ClientRequest(method: "GET", path: "/", headers: [])], options: options, authorization: nil)
            #expect(fcntl(fd, F_GETFD) != -1)
            close(fd)
        }
    }
}

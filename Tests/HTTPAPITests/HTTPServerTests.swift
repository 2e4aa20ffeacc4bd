#if canImport(Glibc)
import Glibc
#endif
import HTTPAPI
import Vocabulary
import Testing

/// The server against curl (a real HTTP/1.1 client) and, for what curl will not send, raw sockets.
/// Loopback only.
@Suite struct HTTPServerTests {
    @Test func aPostsMethodPathHeadersAndBodyReachTheHandlerAndItsResponseReachesCurl() throws {
        let echo = EchoHandler()
        try withServer(handler: echo.answer) { server in
            let run = Curl.run(["-D", "-", "-H", "X-Test: hello", "--data-binary", "the body", "http://127.0.0.1:\(server.ports[0])/v1/echo"])
            #expect(run.status == 0, "\(run.err)")
            #expect(run.out.hasPrefix("HTTP/1.1 200 OK\r\n"), "\(run.out)")
            #expect(run.out.contains("X-Echo: yes\r\n"), "\(run.out)")
            #expect(run.out.hasSuffix("\r\n\r\nPOST /v1/echo hello the body"), "\(run.out)")
            #expect(echo.lastClient.withLock { $0 }.hasPrefix("127.0.0.1:"))
        }
    }

    @Test func severalRequestsShareOneKeptAliveConnection() throws {
        let echo = EchoHandler()
        try withServer(handler: echo.answer) { server in
            let base = "http://127.0.0.1:\(server.ports[0])"
            // num_connects is 1 for the first URL and 0 for the ones that reuse its connection.
            let run = Curl.run(["-w", "%{http_code} %{num_connects}\\n"] + discardingBodies([base + "/a", base + "/b", base + "/c"]))
            #expect(run.status == 0, "\(run.err)")
            #expect(run.out == "200 1\n200 0\n200 0\n", "\(run.out)")
            #expect(echo.count.load(ordering: .relaxed) == 3)
        }
    }

    @Test func theIPv6LoopbackWorksNextToIPv4() throws {
        let echo = EchoHandler()
        try withServer(listen: [("127.0.0.1", 0), ("::1", 0)], handler: echo.answer) { server in
            #expect(server.ports.count == 2 && server.ports.allSatisfy { $0 > 0 })
            let run = Curl.run(["-g", "http://[::1]:\(server.ports[1])/six"])
            #expect(run.status == 0, "\(run.err)")
            #expect(run.out == "GET /six - ", "\(run.out)")
            #expect(echo.lastClient.withLock { $0 }.hasPrefix("[::1]:"))
            #expect(Curl.run(["http://127.0.0.1:\(server.ports[0])/four"]).out == "GET /four - ")
        }
    }

    @Test func thePathIsDecodedAndTheQueryParsedInOrder() throws {
        let seen = Lock<HTTPRequest?>(nil)
        try withServer(handler: { request in seen.withLock { $0 = request }; return .text("ok") }) { server in
            let run = Curl.run(["http://127.0.0.1:\(server.ports[0])/events/a%20b/%C3%A9?x=1&y=hello+world&flag&z=%26%3D&x=2"])
            #expect(run.out == "ok", "\(run.err)")
            let request = try #require(seen.withLock { $0 })
            #expect(request.path == "/events/a b/é")
            #expect(request.query.map { "\($0.0)=\($0.1)" } == ["x=1", "y=hello world", "flag=", "z=&=", "x=2"])
            #expect(request.queryValue("x") == "1")
            #expect(request.header("HOST") == "127.0.0.1:\(server.ports[0])")
        }
    }

    @Test func aBodyOverTheLimitIsRefusedWith413AndTheServerKeepsServing() throws {
        let echo = EchoHandler()
        try withServer(handler: echo.answer) { server in
            let path = temporaryDirectory() + "/big"
            writeBytes(path, [UInt8](repeating: 0x61, count: 2 << 20))
            let url = "http://127.0.0.1:\(server.ports[0])/upload"
            let refused = Curl.run(["-o", "/dev/null", "-w", "%{http_code}", "--data-binary", "@" + path, url])
            #expect(refused.out == "413", "\(refused.out) \(refused.err)")
            // Chunked, so evhttp cannot refuse it from the Content-Length alone.
            let chunked = Curl.run(["-o", "/dev/null", "-w", "%{http_code}", "-H", "Transfer-Encoding: chunked", "--data-binary", "@" + path, url])
            #expect(chunked.out == "413", "\(chunked.out) \(chunked.err)")
            #expect(echo.count.load(ordering: .relaxed) == 0)
            let accepted = Curl.run(["--data-binary", "small", url])
            #expect(accepted.out == "POST /upload - small", "\(accepted.err)")
        }
    }

    @Test func fiftyRequestsFromFiveParallelCurlsAreAllAnswered() throws {
        let echo = EchoHandler()
        try withServer(handler: echo.answer) { server in
            let urls = (0..<10).map { "http://127.0.0.1:\(server.ports[0])/n/\($0)" }
            let results = Lock<[Curl.Result]>([])
            let threads = (0..<5).map { client in
                spawn { results.withLock { $0.append(Curl.run(["-w", "%{http_code}\\n", "-H", "X-Test: \(client)"] + discardingBodies(urls))) } }
            }
            threads.forEach(join)
            let all = results.withLock { $0 }
            #expect(all.count == 5)
            for run in all { #expect(run.out == String(repeating: "200\n", count: 10), "\(run.out) \(run.err)") }
            #expect(echo.count.load(ordering: .relaxed) == 50)
        }
    }

    @Test func stopWhileAClientIsConnectedReturnsPromptlyAndClosesIt() throws {
        let echo = EchoHandler()
        let server = try HTTPServer(listen: [("127.0.0.1", 0)], handler: echo.answer)
        server.start()
        // One connection kept alive after an answered request, one in the middle of sending a body.
        let idle = RawClient(port: server.ports[0])
        idle.send("GET /first HTTP/1.1\r\nHost: x\r\n\r\n")
        let halfSent = RawClient(port: server.ports[0])
        halfSent.send("POST /slow HTTP/1.1\r\nContent-Length: 100\r\n\r\nonly part")
        for _ in 0..<200 where echo.count.load(ordering: .relaxed) == 0 { usleep(10_000) }
        #expect(echo.count.load(ordering: .relaxed) == 1)
        let took = elapsed { server.stop() }
        #expect(took < .seconds(2), "stop took \(took)")
        // Both see the end of their connection at once, not after the 30 s timeout.
        #expect(halfSent.readUntilClosed(seconds: 2) == "")
        let answered = idle.readUntilClosed(seconds: 2)
        #expect(answered.hasPrefix("HTTP/1.1 200 OK") && answered.hasSuffix("GET /first - "), "\(answered)")
        #expect(halfSent.closed && idle.closed)
        server.stop()  // idempotent
        let refused = Curl.run(["http://127.0.0.1:\(server.ports[0])/"])
        #expect(refused.status == 7, "curl should find nothing listening: \(refused.status) \(refused.err)")
    }

    @Test func aPortInUseGivesTheTypedErrorNamingTheAddress() throws {
        let first = try HTTPServer(listen: [("127.0.0.1", 0)], handler: { _ in .text("") })
        let port = first.ports[0]
        #expect(throws: HTTPServerError.bind(address: "127.0.0.1:\(port)", errno: EADDRINUSE)) {
            _ = try HTTPServer(listen: [("127.0.0.1", port)], handler: { _ in .text("") })
        }
        let error = HTTPServerError.bind(address: "127.0.0.1:\(port)", errno: EADDRINUSE)
        #expect(error.description == "cannot listen on 127.0.0.1:\(port): Address already in use")
    }

    @Test func anAddressThisHostDoesNotHaveGivesTheTypedError() throws {
        // 192.0.2.1 is TEST-NET-1: never a local address, and numeric, so no DNS is asked.
        #expect(throws: HTTPServerError.bind(address: "192.0.2.1:8080", errno: EADDRNOTAVAIL)) {
            _ = try HTTPServer(listen: [("127.0.0.1", 0), ("192.0.2.1", 8080)], handler: { _ in .text("") })
        }
        #expect(throws: HTTPServerError.noAddress) { _ = try HTTPServer(listen: [], handler: { _ in .text("") }) }
    }
}

/// curl arguments for `urls` that throw every body away (each URL needs its own `-o`).
func discardingBodies(_ urls: [String]) -> [String] { urls.flatMap { ["-o", "/dev/null", $0] } }

/// A thread for a blocking client.
func spawn(_ body: @escaping @Sendable () -> Void) -> pthread_t {
    final class Box { let body: @Sendable () -> Void; init(_ body: @escaping @Sendable () -> Void) { self.body = body } }
    var thread = pthread_t()
    let rc = pthread_create(&thread, nil, { raw in
        Unmanaged<Box>.fromOpaque(raw!).takeRetainedValue().body()
        return nil
    }, Unmanaged.passRetained(Box(body)).toOpaque())
    precondition(rc == 0)
    return thread
}

func join(_ thread: pthread_t) { precondition(pthread_join(thread, nil) == 0) }

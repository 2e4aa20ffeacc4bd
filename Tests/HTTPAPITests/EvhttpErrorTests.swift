import HTTPAPI
import Testing

/// What evhttp still answers by itself (documented on HTTPServer): pinned down, so a libevent
/// upgrade that changes it is noticed. Its pages are HTML; ours are JSON. Everything else malformed
/// is the framing guard's (FramingTests).
@Suite struct EvhttpErrorTests {
    @Test("a Content-Length over the body limit is refused by evhttp with 413 before the body is read")
    func aDeclaredBodyOverTheLimitIsEvhttps413() throws {
        let echo = EchoHandler()
        try withServer(limits: HTTPLimits(maximumBodyBytes: 1000, maximumHeaderBytes: 1024), handler: echo.answer) { server in
            let client = RawClient(port: server.ports[0])
            client.send("POST / HTTP/1.1\r\nContent-Length: 2000\r\n\r\n")
            let answer = client.readUntilClosed()
            #expect(answer.hasPrefix("HTTP/1.1 413 Request Entity Too Large\r\nContent-Type: text/html\r\nConnection: close\r\n"), "\(answer)")
            #expect(client.closed)
            #expect(echo.count.load(ordering: .relaxed) == 0)
        }
    }

    @Test func aResponseHeaderWithALineBreakBecomesAJSON500InsteadOfBeingInjected() throws {
        try withServer(handler: { _ in HTTPResponse(status: 200, headers: [("X-Evil", "a\r\nSet-Cookie: b")], body: Array("no".utf8)) }) { server in
            let run = Curl.run(["-D", "-", "http://127.0.0.1:\(server.ports[0])/"])
            #expect(run.out.hasPrefix("HTTP/1.1 500 Internal Server Error\r\n"), "\(run.out)")
            #expect(!run.out.contains("Set-Cookie") && !run.out.contains("X-Evil"), "\(run.out)")
            #expect(run.out.hasSuffix(#"{"error":{"code":"internal","message":"the response could not be sent: evhttp_add_header failed"}}"#), "\(run.out)")
        }
    }

    @Test func aStatusOutsideHTTPsRangeBecomesAJSON500() throws {
        try withServer(handler: { _ in .text(status: 42, "?") }) { server in
            let run = Curl.run(["-w", " %{http_code}", "http://127.0.0.1:\(server.ports[0])/"])
            #expect(run.out.hasSuffix("} 500"), "\(run.out)")
            #expect(run.out.contains("status 42 is not an HTTP status"), "\(run.out)")
        }
    }
}

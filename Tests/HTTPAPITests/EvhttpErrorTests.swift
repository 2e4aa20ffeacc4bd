import HTTPAPI
import Testing

/// What evhttp answers by itself for input no handler sees (documented on HTTPServer): these pin it
/// down, so a libevent upgrade that changes them is noticed. Its pages are HTML; ours are JSON.
@Suite struct EvhttpErrorTests {
    static let cases: [(request: String, status: String)] = [
        ("GARBAGE\r\n\r\n", "400 Bad Request"),
        ("GET / HTTP/1.1\r\nbad header line\r\n\r\n", "400 Bad Request"),
        ("GET / HTTP/9.9\r\n\r\n", "400 Bad Request"),
        ("POST / HTTP/1.1\r\nContent-Length: abc\r\n\r\n", "400 Bad Request"),
        ("GET / HTTP/1.1\r\nX-Big: \(String(repeating: "a", count: 2000))\r\n\r\n", "400 Bad Request"),
        ("POST / HTTP/1.1\r\nContent-Length: 2000\r\n\r\n", "413 Request Entity Too Large"),
        ("TRACE / HTTP/1.1\r\nHost: x\r\n\r\n", "501 Not Implemented"),
        ("BREW / HTTP/1.1\r\nHost: x\r\n\r\n", "501 Not Implemented"),
    ]

    @Test("evhttp refuses malformed or oversized input with its own HTML page and closes", arguments: 0..<cases.count)
    func evhttpRefusesWithItsOwnPage(_ index: Int) throws {
        let (request, status) = Self.cases[index]
        let echo = EchoHandler()
        try withServer(limits: HTTPLimits(maximumBodyBytes: 1000, maximumHeaderBytes: 1024), handler: echo.answer) { server in
            let client = RawClient(port: server.ports[0])
            client.send(request)
            let answer = client.readUntilClosed()
            #expect(answer.hasPrefix("HTTP/1.1 \(status)\r\nContent-Type: text/html\r\nConnection: close\r\n"), "\(answer)")
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

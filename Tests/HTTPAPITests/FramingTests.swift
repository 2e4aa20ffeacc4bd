#if canImport(Glibc)
import Glibc
#endif
@testable import HTTPAPI
import JSONCore
import Testing

/// HTTP/1.1 framing (RFC 9112) as a client on a raw socket notices it: a request that could be read
/// two ways is refused with a JSON 400 (or 501/505) and the connection closed, before any handler
/// sees it; legal forms evhttp alone would mishandle are served.
@Suite struct FramingTests {
    static let refused: [(request: String, status: Int, message: String)] = [
        ("GARBAGE\r\n\r\n", 400, "request line"),
        ("GET / HTTP/1.1\r\nbad header line\r\n\r\n", 400, "no colon"),
        ("GET / HTTP/9.9\r\n\r\n", 505, "HTTP/1.1"),
        ("GET / HTTP/2.0\r\n\r\n", 505, "HTTP/2.0"),
        ("POST / HTTP/1.1\r\nContent-Length: abc\r\n\r\n", 400, "Content-Length"),
        ("GET / HTTP/1.1\r\nX-Big: \(String(repeating: "a", count: 2000))\r\n\r\n", 400, "over 1024 bytes"),
        // Whitespace before the colon: evhttp kept "Content-Length " as another header and read
        // the body as a second request.
        ("POST / HTTP/1.1\r\nContent-Length : 5\r\n\r\nGET /", 400, "whitespace between a header name and its colon"),
        ("POST / HTTP/1.1\r\nContent-Length: +2\r\n\r\nab", 400, "Content-Length"),
        ("POST / HTTP/1.1\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nabc", 400, "Content-Length"),
        ("POST / HTTP/1.1\r\nContent-Length: 2, 2\r\n\r\nab", 400, "Content-Length"),
        ("POST / HTTP/1.1\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400, "Transfer-Encoding"),
        ("POST / HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n", 501, "chunked"),
        // NUL: evhttp cut the value there and served the request.
        ("GET / HTTP/1.1\r\nX-Test: a\u{0}b\r\n\r\n", 400, "control character"),
        ("GET / HTTP/1.1\r\nX-Test: a\u{1}b\r\n\r\n", 400, "control character"),
        ("GET / HTTP/1.1\r\nX-Test: a\rb\r\n\r\n", 400, "control character"),
        ("GET / HTTP/1.1\r\nX-Test: a\r\n b\r\n\r\n", 400, "folding"),
        ("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n", 400, "chunk-size"),
        ("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nhello\r\n0\r\n\r\n", 400, "longer than its size"),
    ]

    @Test("a request that could be read two ways is answered 400/501/505 in JSON, closed, and never handled", arguments: 0..<refused.count)
    func anAmbiguousRequestIsRefused(_ index: Int) throws {
        let (request, status, message) = Self.refused[index]
        let echo = EchoHandler()
        try withServer(limits: HTTPLimits(maximumBodyBytes: 1000, maximumHeaderBytes: 1024), handler: echo.answer) { server in
            let client = RawClient(port: server.ports[0])
            client.send(request)
            let answer = client.readUntilClosed()
            #expect(answer.hasPrefix("HTTP/1.1 \(status) "), "\(answer)")
            #expect(answer.contains("Content-Type: application/json\r\n") && answer.contains("Connection: close\r\n"), "\(answer)")
            let body = answer.firstRange(of: "\r\n\r\n").map { String(answer[$0.upperBound...]) } ?? ""
            let json = try JSONParser.parse(body)
            #expect(json["error"]?["message"]?.stringValue?.contains(message) == true, "\(body)")
            #expect(answer.split(separator: "\r\n").filter { $0.hasPrefix("HTTP/1.1 ") }.count == 1, "one answer only: \(answer)")
            #expect(client.closed)
            #expect(echo.count.load(ordering: .relaxed) == 0)
        }
    }

    @Test("CONNECT is a framed 501 in JSON, the connection closed at once, and a request pipelined after it is never answered")
    func connectIsAFramedRefusal() throws {
        let echo = EchoHandler()
        try withServer(handler: echo.answer) { server in
            let client = RawClient(port: server.ports[0])
            client.send("CONNECT x:443 HTTP/1.1\r\nHost: x:443\r\n\r\nGET /after HTTP/1.1\r\nHost: x\r\n\r\n")
            let answer = client.readUntilClosed(seconds: 20)
            #expect(client.closed, "closed by the server, not left for the idle timeout: \(answer)")
            #expect(answer.hasPrefix("HTTP/1.1 501 "), "\(answer)")
            let head = answer.firstRange(of: "\r\n\r\n").map { String(answer[..<$0.lowerBound]) } ?? answer
            let body = answer.firstRange(of: "\r\n\r\n").map { String(answer[$0.upperBound...]) } ?? ""
            let length = head.split(separator: "\r\n").first { $0.lowercased().hasPrefix("content-length:") }
                .flatMap { Int($0.dropFirst("content-length:".count).filter { $0 != " " }) }
            #expect(length == body.utf8.count, "framed: \(head)")
            #expect((try? JSONParser.parse(body))?["error"]?["code"]?.stringValue == "not_implemented", "\(body)")
            #expect(answer.split(separator: "\r\n").filter { $0.hasPrefix("HTTP/1.1 ") }.count == 1, "one answer only: \(answer)")
            #expect(echo.count.load(ordering: .relaxed) == 0, "the handler never saw either request")
        }
    }

    /// Issue 35: a malformed escape or one that decodes to bytes that are not UTF-8 is the
    /// client's mistake, 400 — it was passed on undecoded (or as U+FFFD) and answered 404.
    @Test(arguments: ["/v1/events/%zz/1", "/v1/events/a%2/1", "/v1/%C0%AE%C0%AE/x", "/v1/events/%FF/1", "/x?app=%E3%81"])
    func aMalformedPercentEscapeIs400(_ target: String) throws {
        let echo = EchoHandler()
        try withServer(handler: echo.answer) { server in
            let client = RawClient(port: server.ports[0])
            client.send("GET \(target) HTTP/1.1\r\nHost: x\r\n\r\n")
            let answer = client.readUntilClosed(seconds: 20)
            #expect(answer.hasPrefix("HTTP/1.1 400 "), "\(target): \(answer)")
            #expect(answer.contains("request target"), "\(answer)")
            #expect(echo.count.load(ordering: .relaxed) == 0, "the handler never saw it")
        }
        // Well-formed escapes, UTF-8 included, still reach the handler decoded.
        let fine = try exchange("GET /v1/events/%E5%9C%B0%20a%2Fb HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        #expect(fine.hasPrefix("HTTP/1.1 200 OK\r\n") && fine.hasSuffix("GET /v1/events/地 a/b - "), "\(fine)")
    }

    /// Issue 35: a request must arrive whole within the deadline from its first byte. A client
    /// dripping its head (or its body) a few bytes at a time kept the idle timeout from ever
    /// firing and held the connection forever; now it gets a framed 408 and the close.
    @Test(arguments: ["GET /slow HTTP/1.1\r\nHost: x\r\n", "POST /slow HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n"])
    func aRequestDrippedSlowerThanTheDeadlineIsAnswered408AndClosed(_ start: String) throws {
        let echo = EchoHandler()
        try withServer(limits: HTTPLimits(requestDeadline: .seconds(2)), handler: echo.answer) { server in
            let client = RawClient(port: server.ports[0])
            client.send(start)
            var dripped = 0
            // Up to 10 s of a byte group every 250 ms: far past the deadline, never idle 30 s.
            while dripped < 40, !client.answered(within: 250) {
                client.send(start.hasPrefix("GET") ? "X-Drip: y\r\n" : "0123456789")
                dripped += 1
            }
            let answer = client.readUntilClosed(seconds: 10)
            #expect(answer.hasPrefix("HTTP/1.1 408 "), "\(answer)")
            #expect(client.closed, "closed after the 408")
            #expect(dripped >= 6 && dripped < 25, "answered after \(dripped) drips of 250 ms (deadline 2 s)")
            let body = answer.firstRange(of: "\r\n\r\n").map { String(answer[$0.upperBound...]) } ?? ""
            #expect((try? JSONParser.parse(body))?["error"]?["code"]?.stringValue == "request_timeout", "\(body)")
            #expect(echo.count.load(ordering: .relaxed) == 0, "the handler never saw it")

            // A request that arrives whole, however slowly its connection was idle before, is served.
            let patient = RawClient(port: server.ports[0])
            usleep(2_500_000)
            patient.send("GET /fine HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            #expect(patient.readUntilClosed().hasPrefix("HTTP/1.1 200 OK"))
        }
    }

    @Test("a chunk extension is ignored, not answered 413")
    func aChunkExtensionIsIgnored() throws {
        let answer = try exchange("POST /c HTTP/1.1\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n5;foo=bar\r\nhello\r\n6 ; a=\"b\"\r\n world\r\n0;last\r\nX-Trailer: t\r\n\r\n")
        #expect(answer.hasPrefix("HTTP/1.1 200 OK\r\n"), "\(answer)")
        #expect(answer.hasSuffix("POST /c - hello world"), "\(answer)")
    }

    @Test("an HTTP/1.2 request is answered in HTTP/1.1")
    func aHigherMinorVersionIsAnsweredInHTTP11() throws {
        let answer = try exchange("GET /v HTTP/1.2\r\nConnection: close\r\n\r\n")
        #expect(answer.hasPrefix("HTTP/1.1 200 OK\r\n"), "\(answer)")
    }

    @Test("TRACE and a method evhttp does not know reach the handler instead of evhttp's HTML 501")
    func everyMethodReachesTheHandler() throws {
        #expect(try exchange("TRACE /t HTTP/1.1\r\nConnection: close\r\n\r\n").hasSuffix("TRACE /t - "))
        #expect(try exchange("BREW /t HTTP/1.1\r\nConnection: close\r\n\r\n").hasSuffix("UNKNOWN /t - "))
    }

    @Test("a body on TRACE or HEAD is read and dropped, not read as the next request")
    func aBodyOnABodilessMethodIsDropped() throws {
        let echo = EchoHandler()
        try withServer(handler: echo.answer) { server in
            let client = RawClient(port: server.ports[0])
            client.send("TRACE /t HTTP/1.1\r\nContent-Length: 26\r\n\r\nGET /smuggled HTTP/1.1\r\n\r\n"
                        + "HEAD /h HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3;x\r\nGET\r\n0\r\n\r\n"
                        + "POST /last HTTP/1.1\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
            let answer = client.readUntilClosed()
            #expect(answer.contains("TRACE /t - ") && answer.contains("POST /last - ok") && !answer.contains("smuggled"), "\(answer)")
            #expect(echo.count.load(ordering: .relaxed) == 3)
        }
    }

    @Test("HEAD gets the handler's status and headers, Content-Length of the body, and no body")
    func headHasTheLengthButNoBody() throws {
        let answer = try exchange("HEAD /h HTTP/1.1\r\nConnection: close\r\n\r\n")
        #expect(answer.hasPrefix("HTTP/1.1 200 OK\r\n"), "\(answer)")
        #expect(answer.contains("Content-Length: 10\r\n") && answer.contains("X-Echo: yes\r\n"), "\(answer)")
        #expect(answer.hasSuffix("\r\n\r\n"), "no body: \(answer)")
    }

    @Test("a request sent a byte at a time, and a good one pipelined before a bad one, are each read as sent")
    func bytesAreFollowedAcrossReads() throws {
        let echo = EchoHandler()
        try withServer(handler: echo.answer) { server in
            let client = RawClient(port: server.ports[0])
            for byte in "POST /slow HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3;x\r\nabc\r\n0\r\n\r\n" {
                client.send(String(byte))
                usleep(1000)
            }
            client.send("POST /next HTTP/1.1\r\nContent-Length: 2\r\n\r\nokGET / HTTP/1.1\r\nX-Test : smuggled\r\n\r\n")
            let answer = client.readUntilClosed()
            // The bodies end without a line break: the status lines follow them on the same line.
            let statuses = answer.split(separator: "HTTP/1.1 ").map { $0.prefix { $0 != "\r\n" } }
            #expect(statuses == ["200 OK", "200 OK", "400 Bad Request"], "\(answer)")
            #expect(answer.contains("POST /slow - abc") && answer.contains("POST /next - ok"), "\(answer)")
            #expect(client.closed)
            #expect(echo.count.load(ordering: .relaxed) == 2)
        }
    }

    private func exchange(_ request: String) throws -> String {
        let echo = EchoHandler()
        return try withServer(handler: echo.answer) { server in
            let client = RawClient(port: server.ports[0])
            client.send(request)
            return client.readUntilClosed()
        }
    }
}

/// The framing as evhttp sees it, whatever the socket's reads cut the stream into.
@Suite struct RequestFramingSplitTests {
    static let stream = Array(("POST /a HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello"
        + "POST /b HTTP/1.2\r\nTransfer-Encoding: chunked\r\n\r\n3;ext=1\r\nabc\r\n10\r\n0123456789abcdef\r\n0\r\nX-T: 1\r\n\r\n"
        + "\r\nHEAD /c HTTP/1.1\r\nContent-Length: 3\r\n\r\nxyz"
        + "GET /d HTTP/1.0\nX-Test: bare LF\n\n").utf8)

    @Test("every cut of a pipelined stream releases the same bytes and verdicts as one read")
    func everyCutReleasesTheSame() throws {
        var whole = RequestFraming(maximumHeadBytes: 1024)
        let expected = whole.feed(Self.stream)
        #expect(whole.verdicts == [nil, nil, nil, nil])
        let text = String(decoding: expected, as: UTF8.self)
        #expect(text.contains("POST /b HTTP/1.1\r\n") && text.contains("3\r\nabc\r\n10\r\n") && !text.contains("ext"), "\(text)")
        #expect(text.contains("HEAD /c HTTP/1.1\r\n\r\nGET /d"), "the HEAD's body is dropped with its Content-Length: \(text)")
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<200 {
            var framing = RequestFraming(maximumHeadBytes: 1024)
            var released: [UInt8] = []
            var index = 0
            while index < Self.stream.count {
                let count = Int.random(in: 1...7, using: &generator)
                released += framing.feed(Array(Self.stream[index..<min(index + count, Self.stream.count)]))
                index += count
            }
            #expect(released == expected)
            #expect(framing.verdicts == [nil, nil, nil, nil])
        }
    }
}

#if canImport(Glibc)
import Glibc
#endif
import Crypto
import HTTP2
import HTTP2TestSupport
import IO
import Vocabulary
import Testing

/// A server handler for transport tests: echoes the body, and obeys a few path-driven behaviours.
final class EchoHandler: HTTP2RequestHandler, @unchecked Sendable {
    let seen = Lock<[String]>([])
    /// Arrival times (monotonic ns) of the "/delayed/" requests.
    let arrivals = Lock<[UInt64]>([])
    func handle(_ request: ServerRequest, on connection: ServerConnection) {
        seen.withLock { $0.append("\(request.method) \(request.path)") }
        if request.path.hasPrefix("/delayed/") {
            arrivals.withLock { $0.append(MonotonicInstant.now().nanoseconds) }
            connection.respond(streamID: request.streamID, ServerResponse(status: 200), delay: .nanoseconds(30_000_000))
            return
        }
        switch request.path {
        case "/refuse": connection.reset(streamID: request.streamID, errorCode: 7)
        case "/slow": connection.respond(streamID: request.streamID, ServerResponse(status: 200), delay: .nanoseconds(300_000_000))
        case "/goaway":
            connection.goAway(lastStreamID: request.streamID - 2, reason: "Shutdown")
        case "/abort":
            connection.abort()
        default:
            connection.respond(streamID: request.streamID, ServerResponse(
                status: 200, headers: [("apns-id", "echo-\(request.streamID)"), ("apns-auth-echo", request.header("authorization") ?? "")],
                body: request.body))
        }
    }
}

@Suite(.serialized) struct TransportTests {
    static let certificates = makeTestCertificates()

    func withServer(maximumStreams: UInt32 = 100, _ body: (Int, EchoHandler) throws -> Void) throws {
        let handler = EchoHandler()
        let tls = try TLSConfiguration.server(certificateFile: Self.certificates.cert, keyFile: Self.certificates.key)
        try HTTP2Tests.withServer(tls: tls, handler: handler, maximumStreams: maximumStreams) { server in try body(server.port, handler) }
    }

    /// The raw client with APNs' one-stream rule: one stream until the first 2xx.
    func perform(_ requests: [ClientRequest], options: ClientConnectionOptions, authorization: String?,
                 timeout: Duration = .seconds(30)) -> Result<[ClientResult], TransportError> {
        OneShotClient.perform(requests, options: options, authorization: authorization, timeout: timeout, streamsUntilFirstSuccess: 1)
    }

    func options(port: Int, ca: String? = certificates.ca, host: String = "127.0.0.1") throws -> ClientConnectionOptions {
        ClientConnectionOptions(host: host, port: port, tls: try TLSConfiguration.client(caFile: ca))
    }

    @Test func requestsAndResponsesRoundTripOverTLS() throws {
        try withServer { port, handler in
            let requests = (0..<20).map { i in
                ClientRequest(method: "POST", path: "/3/device/\(i)", headers: [("apns-topic", "com.example")], body: Array("body-\(i)".utf8))
            }
            let results = try perform(requests, options: options(port: port), authorization: "bearer abc").get()
            #expect(results.count == 20)
            for (i, result) in results.enumerated() {
                guard case let .response(status, headers, body) = result else { Issue.record("request \(i): \(result)"); continue }
                #expect(status == 200)
                #expect(String(decoding: body, as: UTF8.self) == "body-\(i)")
                #expect(headers.contains { $0.name == "apns-auth-echo" && $0.value == "bearer abc" })
            }
            #expect(handler.seen.withLock { $0.count } == 20)
        }
    }

    @Test func anUntrustedCertificateIsRefused() throws {
        try withServer { port, _ in
            // The system bundle does not contain the test CA: verification must fail, never be skipped.
            let result = perform([ClientRequest(method: "GET", path: "/", headers: [])],
                                               options: try options(port: port, ca: nil), authorization: nil)
            guard case let .failure(error) = result else { Issue.record("TLS must fail without the CA"); return }
            #expect(error.description.contains("certificate verification failed"))
        }
    }

    @Test func aWrongHostNameIsRefused() throws {
        try withServer { port, _ in
            var opts = try options(port: port)
            opts.serverName = "api.push.apple.com"
            let result = perform([ClientRequest(method: "GET", path: "/", headers: [])], options: opts, authorization: nil)
            guard case .failure = result else { Issue.record("a certificate for another name must be refused"); return }
        }
    }

    @Test func aClosedPortIsAConnectError() throws {
        // Bind and close a socket to find a port nobody listens on.
        let loop = try EventLoop()
        let server = try HTTP2Server(loop: loop, host: "127.0.0.1", port: 0,
                                     tls: try TLSConfiguration.server(certificateFile: Self.certificates.cert, keyFile: Self.certificates.key),
                                     handler: EchoHandler())
        let port = server.port
        _ = consume server
        let result = perform([ClientRequest(method: "GET", path: "/", headers: [])], options: try options(port: port), authorization: nil)
        guard case let .failure(error) = result else { Issue.record("nothing listens there"); return }
        #expect(error.description.contains("cannot connect"))
    }

    @Test func refusedStreamsAreProvablyUnprocessed() throws {
        try withServer { port, _ in
            let results = try perform([
                ClientRequest(method: "POST", path: "/ok", headers: [], body: [1]),
                ClientRequest(method: "POST", path: "/refuse", headers: [], body: [1]),
            ], options: options(port: port), authorization: nil).get()
            guard case .response(200, _, _) = results[0] else { Issue.record("\(results[0])"); return }
            guard case let .failed(failure) = results[1] else { Issue.record("\(results[1])"); return }
            #expect(failure.provablyUnprocessed)
        }
    }

    @Test func theOneStreamStartIsHonoured() throws {
        // Until a 2xx arrives a connection carries one stream: the server holds each answer 30 ms, and
        // while the first is held no second request may arrive. After it, all the rest arrive at once.
        try withServer { port, handler in
            let requests = (0..<10).map { ClientRequest(method: "POST", path: "/delayed/\($0)", headers: [], body: [0]) }
            let results = try perform(requests, options: options(port: port), authorization: nil).get()
            #expect(results.allSatisfy { if case .response(200, _, _) = $0 { true } else { false } })
            #expect(handler.seen.withLock { $0 }.first == "POST /delayed/0")
            // The second request can only leave after the first answer, which the server held 30 ms.
            let arrivals = handler.arrivals.withLock { $0 }
            #expect(arrivals.count == 10)
            #expect(arrivals[1] - arrivals[0] >= 29_000_000, "second request came \(arrivals[1] - arrivals[0]) ns after the first")
        }
    }

    @Test func aDeadlineEndsAStreamAsTimedOut() throws {
        try withServer { port, _ in
            let results = try perform([ClientRequest(method: "POST", path: "/slow", headers: [], body: [1])],
                                                    options: options(port: port), authorization: nil, timeout: .nanoseconds(100_000_000)).get()
            guard case let .failed(.timedOut(sent)) = results[0] else { Issue.record("\(results[0])"); return }
            #expect(sent)
        }
    }

    @Test func streamsAboveGoAwayAreRefusedAndBelowItAreAnswered() throws {
        try withServer { port, _ in
            let results = try perform([
                ClientRequest(method: "POST", path: "/ok", headers: [], body: [1]),
                ClientRequest(method: "POST", path: "/delayed/a", headers: [], body: [1]),
                ClientRequest(method: "POST", path: "/delayed/b", headers: [], body: [1]),
                ClientRequest(method: "POST", path: "/goaway", headers: [], body: [1]),
            ], options: options(port: port), authorization: nil).get()
            for index in 0..<3 {
                guard case .response(200, _, _) = results[index] else { Issue.record("request \(index): \(results[index])"); continue }
            }
            guard case let .failed(failure) = results[3] else { Issue.record("\(results[3])"); return }
            // nghttp2 closes streams above the GOAWAY's last-stream-id as REFUSED_STREAM: safe to resend.
            guard case .refused = failure else { Issue.record("\(failure) must be refused"); return }
        }
    }

    @Test func aDroppedConnectionLeavesInFlightStreamsUnknown() throws {
        try withServer { port, _ in
            let results = try perform([
                ClientRequest(method: "POST", path: "/ok", headers: [], body: [1]),
                ClientRequest(method: "POST", path: "/delayed/a", headers: [], body: [1]),
                ClientRequest(method: "POST", path: "/abort", headers: [], body: [1]),
            ], options: options(port: port), authorization: nil).get()
            guard case .response(200, _, _) = results[0] else { Issue.record("\(results[0])"); return }
            for index in 1..<3 {
                guard case let .failed(failure) = results[index] else { Issue.record("\(results[index])"); continue }
                #expect(!failure.provablyUnprocessed, "a stream in flight on a dropped connection may have been processed")
            }
        }
    }
}

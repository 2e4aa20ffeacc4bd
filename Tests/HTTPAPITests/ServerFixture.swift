import HTTPAPI
import Synchronization
import Vocabulary

/// Runs a started server for the duration of `body`, stopping it afterwards.
func withServer<T>(listen: [(host: String, port: Int)] = [("127.0.0.1", 0)], limits: HTTPLimits = HTTPLimits(),
                   answering answer: @escaping @Sendable (HTTPRequest) -> HTTPAnswer,
                   _ body: (HTTPServer) throws -> T) throws -> T {
    let server = try HTTPServer(listen: listen, limits: limits, answering: answer)
    server.start()
    defer { server.stop() }
    return try body(server)
}

func withServer<T>(listen: [(host: String, port: Int)] = [("127.0.0.1", 0)], limits: HTTPLimits = HTTPLimits(),
                   handler: @escaping @Sendable (HTTPRequest) -> HTTPResponse,
                   _ body: (HTTPServer) throws -> T) throws -> T {
    try withServer(listen: listen, limits: limits, answering: { .response(handler($0)) }, body)
}

/// Answers every request with "<method> <path> <x-test header> <body>" and counts them.
final class EchoHandler: Sendable {
    let count = Atomic<Int>(0)
    let lastClient = Lock("")

    func answer(_ request: HTTPRequest) -> HTTPResponse {
        count.add(1, ordering: .relaxed)
        lastClient.withLock { $0 = request.clientAddress }
        let text = "\(request.method) \(request.path) \(request.header("X-Test") ?? "-") \(String(decoding: request.body, as: UTF8.self))"
        return HTTPResponse(status: 200, headers: [("Content-Type", "text/plain"), ("X-Echo", "yes")], body: Array(text.utf8))
    }
}

/// Milliseconds on CLOCK_MONOTONIC, for "returns promptly" checks.
func elapsed(_ body: () throws -> Void) rethrows -> Duration {
    let clock = ContinuousClock()
    let start = clock.now
    try body()
    return clock.now - start
}

import IO
import Vocabulary

/// An HTTP/1.1 server on libevent's evhttp, its loop on its own thread (apart from the push loops).
/// Every request of every path goes to one handler, on the server thread: a handler must be quick,
/// or answer `.deferred` and respond from elsewhere. evhttp parses and bounds the requests; this type
/// only turns them into values and back.
///
/// Framing is checked before evhttp parses (`RequestFraming`, RFC 9112): a request line, header
/// line, Content-Length, Transfer-Encoding or version that could be read two ways, or a head over
/// `maximumHeaderBytes`, is a JSON 400 (501 for a transfer coding other than chunked, 505 for an
/// HTTP major version other than 1) with `Connection: close`, and no handler sees it. Every method
/// reaches the handler (HTTPRequest.method "UNKNOWN" for one evhttp does not know). What evhttp
/// still answers by itself, with its own HTML page and `Connection: close` (HTTPServerTests pin it
/// down): a body over `maximumBodyBytes` (Content-Length or chunked) → 413; a request target its
/// URI parser refuses → 400. A HEAD's answer carries the headers (Content-Length included) without
/// the body. Every other answer is the handler's, or JSON (`HTTPResponse.error`).
public final class HTTPServer: Sendable {
    private enum State { case ready, running(OSThread), stopped }
    private let core: EventHTTPCore
    private let state = Lock(State.ready)
    /// The bound ports, in the order of `listen` (port 0 becomes the port the kernel picked).
    public let ports: [Int]

    /// Connections answered 503 because the process had no descriptor to spare (`AcceptGuard`).
    public var refusedForDescriptors: Int { core.acceptGuard.refused.load(ordering: .relaxed) }

    /// Binds every address at once (a failure names the address), but serves nothing until `start`.
    public init(listen: [(host: String, port: Int)], limits: HTTPLimits = HTTPLimits(),
                answering answer: @escaping @Sendable (HTTPRequest) -> HTTPAnswer) throws(HTTPServerError) {
        core = try EventHTTPCore(listen: listen, limits: limits, answer: answer)
        ports = core.ports
    }

    /// A server whose handler always answers at once.
    public convenience init(listen: [(host: String, port: Int)], limits: HTTPLimits = HTTPLimits(),
                            handler: @escaping @Sendable (HTTPRequest) -> HTTPResponse) throws(HTTPServerError) {
        try self.init(listen: listen, limits: limits, answering: { .response(handler($0)) })
    }

    deinit { stop() }

    /// Starts serving on a thread named "sokuho-http". Once only; after `stop` it does nothing.
    public func start() {
        let core = self.core
        state.withLock { state in
            guard case .ready = state else { return }
            state = .running(OSThread.start(name: "sokuho-http") { core.run() })
        }
    }

    /// Stops serving and waits for the server thread to end: listeners and connections are closed
    /// when it returns, a request in a handler finishes first. Idempotent; any thread but the server's.
    public func stop() {
        let previous = state.withLock { state -> State in
            defer { state = .stopped }
            return state
        }
        switch previous {
        case let .running(thread):
            core.mailbox.requestStop()
            thread.join()
        case .ready:
            core.close()  // never ran: free on this thread, no loop can be using it
        case .stopped:
            break
        }
    }
}

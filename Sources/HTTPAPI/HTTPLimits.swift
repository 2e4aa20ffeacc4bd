/// Bounds on what one client may send and how long it may take, enforced by evhttp itself.
public struct HTTPLimits: Sendable {
    /// A larger body is refused with 413 before the handler sees it (evhttp's HTML error page).
    public var maximumBodyBytes: Int
    /// The request line plus all headers; more is refused (evhttp answers 400, see HTTPServer).
    public var maximumHeaderBytes: Int
    /// How long a connection may sit idle while reading a request or writing a response. libevent
    /// 2.1 has one timeout for both directions (separate ones came in 2.2).
    public var timeout: Duration
    /// How long a request may take to arrive whole, from its first byte to its last: the idle
    /// `timeout` restarts at every byte, so a client dripping one byte a second held a connection
    /// forever. Past it the connection is answered 408 and closed (`FramingGuard`).
    public var requestDeadline: Duration

    public init(maximumBodyBytes: Int = 1 << 20, maximumHeaderBytes: Int = 16 << 10, timeout: Duration = .seconds(30),
                requestDeadline: Duration = .seconds(30)) {
        self.maximumBodyBytes = maximumBodyBytes
        self.maximumHeaderBytes = maximumHeaderBytes
        self.timeout = timeout
        self.requestDeadline = requestDeadline
    }
}

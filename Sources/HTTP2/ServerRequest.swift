/// A complete request as a server connection received it.
public struct ServerRequest: Sendable {
    public let streamID: Int32
    public let method: String
    public let path: String
    public let authority: String
    /// Regular headers (lowercase names) in arrival order, pseudo-headers excluded.
    public let headers: [(name: String, value: String)]
    public let body: [UInt8]

    /// The first value of header `name` (lowercase), or nil.
    public func header(_ name: String) -> String? { headers.first { $0.name == name }?.value }
    /// How many times header `name` appears.
    public func count(of name: String) -> Int { headers.reduce(0) { $0 + ($1.name == name ? 1 : 0) } }
}

/// A response the server will send.
public struct ServerResponse: Sendable {
    public var status: Int
    public var headers: [(name: String, value: String)]
    public var body: [UInt8]
    /// For the handler's own bookkeeping: handed back in `responseSent` when the answer leaves.
    public var note: String?

    public init(status: Int, headers: [(name: String, value: String)] = [], body: [UInt8] = [], note: String? = nil) {
        self.status = status
        self.headers = headers
        self.body = body
        self.note = note
    }
}

/// What a server does with requests. Calls arrive on the connection's loop thread.
public protocol HTTP2RequestHandler: AnyObject {
    /// Answer with `connection.respond(...)` now or later (from the same loop thread).
    func handle(_ request: ServerRequest, on connection: ServerConnection)
    /// A connection finished its TLS handshake.
    func connectionOpened(_ connection: ServerConnection)
    /// A connection is gone.
    func connectionClosed(_ connection: ServerConnection)
    /// A response was handed to HTTP/2 (after its delay, if any); responses dropped with the
    /// connection never get here.
    func responseSent(_ response: ServerResponse, on connection: ServerConnection)
}

extension HTTP2RequestHandler {
    public func connectionOpened(_ connection: ServerConnection) {}
    public func connectionClosed(_ connection: ServerConnection) {}
    public func responseSent(_ response: ServerResponse, on connection: ServerConnection) {}
}

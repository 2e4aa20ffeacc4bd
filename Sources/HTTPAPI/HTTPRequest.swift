/// One HTTP/1.1 request as the handler sees it: plain values copied out of libevent, so a handler may
/// keep it or hand it to another thread after the C request is gone.
public struct HTTPRequest: Sendable {
    /// "GET", "POST", "PUT", "DELETE", "HEAD", "OPTIONS", "PATCH", "CONNECT", "TRACE", or "UNKNOWN"
    /// for a method evhttp does not know (it keeps no name for it). A HEAD is answered without the
    /// response's body (the HTTP layer drops it, keeping its Content-Length).
    public var method: String
    /// The percent-decoded path without the query ("/v1/events/a b" for "/v1/events/a%20b?x=1").
    public var path: String
    /// The query's pairs in order, percent- and plus-decoded; a key without "=" has the value "".
    public var query: [(String, String)]
    /// Header names lowercased (HTTP names are case-insensitive), values as sent, in order.
    public var headers: [(String, String)]
    public var body: [UInt8]
    /// The peer as "127.0.0.1:54321" or "[::1]:54321".
    public var clientAddress: String

    public init(method: String, path: String, query: [(String, String)] = [], headers: [(String, String)] = [],
                body: [UInt8] = [], clientAddress: String = "") {
        self.method = method
        self.path = path
        self.query = query
        self.headers = headers.map { ($0.0.lowercased(), $0.1) }
        self.body = body
        self.clientAddress = clientAddress
    }

    /// The first value of header `name`, any case.
    public func header(_ name: String) -> String? {
        let wanted = name.lowercased()
        return headers.first { $0.0 == wanted }?.1
    }

    /// The first value of query parameter `name`.
    public func queryValue(_ name: String) -> String? { query.first { $0.0 == name }?.1 }
}

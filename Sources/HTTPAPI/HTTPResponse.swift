import JSONCore

/// What the server sends back. libevent adds Content-Length, Date and the Connection header.
public struct HTTPResponse: Sendable {
    public var status: Int
    public var headers: [(String, String)]
    public var body: [UInt8]

    public init(status: Int, headers: [(String, String)] = [], body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// `bytes` (already JSON) as application/json.
    public static func json(status: Int = 200, _ bytes: [UInt8]) -> HTTPResponse {
        HTTPResponse(status: status, headers: [("Content-Type", "application/json")], body: bytes)
    }

    public static func text(status: Int = 200, _ text: String) -> HTTPResponse {
        HTTPResponse(status: status, headers: [("Content-Type", "text/plain; charset=utf-8")], body: Array(text.utf8))
    }

    public static func html(status: Int = 200, _ html: String) -> HTTPResponse {
        HTTPResponse(status: status, headers: [("Content-Type", "text/html; charset=utf-8")], body: Array(html.utf8))
    }

    /// The API's one error shape: `{"error":{"code":"…","message":"…"}}`. `code` is a stable
    /// machine-readable word ("payload_too_large"), `message` says what to change.
    public static func error(status: Int, code: String, message: String) -> HTTPResponse {
        var writer = JSONWriter()
        writer.beginObject()
        writer.key("error")
        writer.beginObject()
        writer.key("code"); writer.string(code)
        writer.key("message"); writer.string(message)
        writer.endObject()
        writer.endObject()
        return .json(status: status, writer.bytes)
    }
}

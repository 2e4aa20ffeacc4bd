#if canImport(Glibc)
import Glibc
#endif
import CLibEvent

/// Copies an evhttp request into an HTTPRequest. Loop thread only; nothing returned points into
/// libevent.
enum EventHTTPRequestReader {
    static func read(_ request: OpaquePointer) throws(LibEvent.Failure) -> HTTPRequest {
        let uri = try LibEvent.require("evhttp_request_get_evhttp_uri", evhttp_request_get_evhttp_uri(request))
        let path = try evhttp_uri_get_path(uri).map { path throws(LibEvent.Failure) in try decode(path, plusIsSpace: false) } ?? ""
        let query = try evhttp_uri_get_query(uri).map { query throws(LibEvent.Failure) in try parseQuery(String(cString: query)) } ?? []
        let headerList = try LibEvent.require("evhttp_request_get_input_headers", evhttp_request_get_input_headers(request))
        let buffer = try LibEvent.require("evhttp_request_get_input_buffer", evhttp_request_get_input_buffer(request))
        var body = [UInt8](repeating: 0, count: evbuffer_get_length(buffer))
        if !body.isEmpty {
            let copied = body.withUnsafeMutableBytes { evbuffer_copyout(buffer, $0.baseAddress, $0.count) }
            try LibEvent.count("evbuffer_copyout", copied, expected: body.count)
        }
        return HTTPRequest(method: method(evhttp_request_get_command(request)), path: path, query: query,
                           headers: headers(headerList), body: body, clientAddress: try peer(request))
    }

    private static func method(_ command: evhttp_cmd_type) -> String {
        switch command {
        case EVHTTP_REQ_GET: return "GET"
        case EVHTTP_REQ_POST: return "POST"
        case EVHTTP_REQ_HEAD: return "HEAD"
        case EVHTTP_REQ_PUT: return "PUT"
        case EVHTTP_REQ_DELETE: return "DELETE"
        case EVHTTP_REQ_OPTIONS: return "OPTIONS"
        case EVHTTP_REQ_TRACE: return "TRACE"
        case EVHTTP_REQ_CONNECT: return "CONNECT"
        case EVHTTP_REQ_PATCH: return "PATCH"
        default: return "UNKNOWN"
        }
    }

    /// A header list (a TAILQ of key/value pairs) in order, names lowercased.
    private static func headers(_ list: UnsafeMutablePointer<evkeyvalq>) -> [(String, String)] {
        var out: [(String, String)] = []
        var entry = list.pointee.tqh_first
        while let pair = entry {
            out.append((String(cString: pair.pointee.key).lowercased(), String(cString: pair.pointee.value)))
            entry = pair.pointee.next.tqe_next
        }
        return out
    }

    /// "a=1&b=x+y&flag" → [("a","1"),("b","x y"),("flag","")]. Splitting is ours, so a key without "="
    /// is kept (evhttp_parse_query_str refuses the whole query for it); decoding is libevent's.
    private static func parseQuery(_ query: String) throws(LibEvent.Failure) -> [(String, String)] {
        var out: [(String, String)] = []
        for part in query.split(separator: "&", omittingEmptySubsequences: true) {
            let pieces = part.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let key = try decode(String(pieces[0]), plusIsSpace: true)
            let value = pieces.count > 1 ? try decode(String(pieces[1]), plusIsSpace: true) : ""
            out.append((key, value))
        }
        return out
    }

    /// Percent-decodes with libevent. Invalid UTF-8 (or %00) in the result becomes U+FFFD / NUL in the
    /// String rather than cutting it short: the size libevent reports is used, not strlen.
    private static func decode(_ text: UnsafePointer<CChar>, plusIsSpace: Bool) throws(LibEvent.Failure) -> String {
        var size = 0
        let decoded = try LibEvent.require("evhttp_uridecode", evhttp_uridecode(text, plusIsSpace ? 1 : 0, &size))
        defer { free(decoded) }
        return decoded.withMemoryRebound(to: UInt8.self, capacity: size) { String(decoding: UnsafeBufferPointer(start: $0, count: size), as: UTF8.self) }
    }

    private static func decode(_ text: String, plusIsSpace: Bool) throws(LibEvent.Failure) -> String {
        let decoded = text.withCString { pointer in Result { () throws(LibEvent.Failure) in try decode(pointer, plusIsSpace: plusIsSpace) } }
        return try decoded.get()
    }

    /// "127.0.0.1:54321" or "[::1]:54321".
    private static func peer(_ request: OpaquePointer) throws(LibEvent.Failure) -> String {
        let connection = try LibEvent.require("evhttp_request_get_connection", evhttp_request_get_connection(request))
        var host: UnsafeMutablePointer<CChar>?
        var port: UInt16 = 0
        evhttp_connection_get_peer(connection, &host, &port)
        return addressText(host: host.map { String(cString: $0) } ?? "?", port: Int(port))
    }
}

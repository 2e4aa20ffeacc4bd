import CLibEvent

/// Puts an HTTPResponse into an evhttp request and sends it. Loop thread only.
enum EventHTTPResponseWriter {
    /// Adds headers and body, then sends. Throws before anything is sent, so the caller can reset
    /// the request and send something else.
    static func write(_ response: HTTPResponse, to request: OpaquePointer) throws(LibEvent.Failure) {
        guard (100...599).contains(response.status) else { throw LibEvent.Failure(call: "status \(response.status) is not an HTTP status") }
        let headers = try LibEvent.require("evhttp_request_get_output_headers", evhttp_request_get_output_headers(request))
        for (name, value) in response.headers {
            // -1 for a name or value with CR/LF in it: header injection is refused, not sent.
            try LibEvent.check("evhttp_add_header", evhttp_add_header(headers, name, value))
        }
        // HEAD: the headers the GET would have, its Content-Length included, and no body
        // (RFC 9110 §9.3.2; evhttp sends neither for HEAD by itself).
        if evhttp_request_get_command(request) == EVHTTP_REQ_HEAD {
            if !response.headers.contains(where: { $0.0.lowercased() == "content-length" }) {
                try LibEvent.check("evhttp_add_header", evhttp_add_header(headers, "Content-Length", String(response.body.count)))
            }
            evhttp_send_reply(request, Int32(response.status), nil, nil)
            return
        }
        let buffer = try LibEvent.require("evhttp_request_get_output_buffer", evhttp_request_get_output_buffer(request))
        if !response.body.isEmpty {
            let rc = response.body.withUnsafeBytes { evbuffer_add(buffer, $0.baseAddress, $0.count) }
            try LibEvent.check("evbuffer_add", rc)
        }
        // A nil reason: libevent's phrase for the status ("Payload Too Large"…).
        evhttp_send_reply(request, Int32(response.status), nil, nil)
    }

    /// Forgets what a failed `write` added.
    static func reset(_ request: OpaquePointer) throws(LibEvent.Failure) {
        let headers = try LibEvent.require("evhttp_request_get_output_headers", evhttp_request_get_output_headers(request))
        evhttp_clear_headers(headers)
        let buffer = try LibEvent.require("evhttp_request_get_output_buffer", evhttp_request_get_output_buffer(request))
        try LibEvent.check("evbuffer_drain", evbuffer_drain(buffer, evbuffer_get_length(buffer)))
    }
}

import CNghttp2
import IO

/// What an HTTP/2 session reports while it decodes input or encodes output. Every call happens
/// synchronously inside `HTTP2Session.receive` or `produce`, on the caller's thread.
package protocol HTTP2SessionDelegate: AnyObject {
    /// A HEADERS frame opened stream `streamID` (server side: a new request).
    func sessionBeganHeaders(streamID: Int32)
    func sessionReceivedHeader(streamID: Int32, name: UnsafeBufferPointer<UInt8>, value: UnsafeBufferPointer<UInt8>)
    func sessionReceivedData(streamID: Int32, data: UnsafeBufferPointer<UInt8>)
    /// END_STREAM arrived on HEADERS or DATA: the peer finished its message on this stream.
    func sessionReceivedEndOfStream(streamID: Int32)
    /// Our HEADERS for `streamID` left (the request may now have been processed).
    func sessionSentHeaders(streamID: Int32)
    /// Our HEADERS for a stream could not be sent (the session is going away); `userData` is the
    /// stream's, as given to `submitRequest`.
    func sessionCouldNotSendHeaders(streamID: Int32, userData: UnsafeMutableRawPointer?)
    func sessionClosedStream(streamID: Int32, errorCode: UInt32)
    func sessionReceivedGoAway(lastStreamID: Int32, errorCode: UInt32, debugData: UnsafeBufferPointer<UInt8>)
    func sessionReceivedPingAcknowledgement()
    /// Copies up to `length` body bytes of `streamID` (whose data source is `source`) into `buffer`;
    /// sets `endOfData` with the last ones.
    func sessionReadBody(streamID: Int32, source: UnsafeMutableRawPointer?, into buffer: UnsafeMutablePointer<UInt8>,
                         length: Int, endOfData: inout Bool) -> Int
}

/// One HTTP/2 session on nghttp2, sans I/O: bytes from the peer go in through `receive`, frames to
/// send come out of `produce` into an output buffer the owner writes (to TLS, or in a test to the
/// other side's `receive`), and everything that happens is told to the delegate. The client and the
/// server connection share it; tests drive two of them against each other without sockets.
///
/// Confined to one thread. nghttp2's memory comes from a per-session `SessionAllocator`, so the
/// steady state of a fan-out allocates nothing.
package final class HTTP2Session {
    package enum Role: Sendable { case client, server }

    package let role: Role
    private unowned let delegate: HTTP2SessionDelegate
    private let allocator = SessionAllocator()
    private var session: OpaquePointer
    private var output = OutputBuffer(capacity: 64 * 1024)

    /// Starts a session and queues our SETTINGS (`maximumConcurrentStreams` for the peer's streams,
    /// a 1 MB stream window and a 16 MB connection window: pushes are small, many are in flight).
    package init(role: Role, delegate: HTTP2SessionDelegate, maximumConcurrentStreams: UInt32) throws(TransportError) {
        self.role = role
        self.delegate = delegate
        var created: OpaquePointer?
        let callbacks = HTTP2Session.callbacks
        let rc = role == .client
            ? nghttp2_session_client_new3(&created, callbacks, nil, nil, allocator.mem)
            : nghttp2_session_server_new3(&created, callbacks, nil, nil, allocator.mem)
        try Nghttp2.check(rc, "nghttp2_session_new")
        guard let created else { throw .protocolError("nghttp2_session_new returned no session") }
        session = created
        nghttp2_session_set_user_data(session, Unmanaged.passUnretained(self).toOpaque())
        var settings = [
            nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS.rawValue), value: maximumConcurrentStreams),
            nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE.rawValue), value: 1 << 20),
        ]
        try Nghttp2.check(nghttp2_submit_settings(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), &settings, settings.count), "nghttp2_submit_settings")
        try Nghttp2.check(nghttp2_session_set_local_window_size(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), 0, 16 << 20),
                          "nghttp2_session_set_local_window_size")
    }

    deinit {
        nghttp2_session_del(session)
        output.free()
    }

    // MARK: Bytes in, bytes out

    /// Decodes bytes received from the peer; the delegate hears about each event before it returns.
    package func receive(_ bytes: UnsafePointer<UInt8>, count: Int) throws(TransportError) {
        _ = try Nghttp2.check(nghttp2_session_mem_recv(session, bytes, count), "nghttp2_session_mem_recv")
    }

    /// Moves frames waiting to be sent into the output buffer until about `limit` bytes are pending
    /// (coalesced writes: ≈16 KB per TLS write cut CPU per request by ≈30%, INTEROP.md).
    package func produce(limit: Int = 16 * 1024) throws(TransportError) {
        while output.pending < limit {
            var data: UnsafePointer<UInt8>?
            let produced = try Nghttp2.check(nghttp2_session_mem_send(session, &data), "nghttp2_session_mem_send")
            guard produced > 0, let data else { return }
            output.append(data, count: produced)
        }
    }

    /// The bytes waiting to be written, at a stable address until `consumeOutput` or `produce`.
    package var pendingOutput: UnsafeRawBufferPointer { UnsafeRawBufferPointer(start: output.base + output.start, count: output.pending) }
    package var hasPendingOutput: Bool { !output.isEmpty }
    /// Marks `count` pending bytes as written.
    package func consumeOutput(_ count: Int) { output.consume(count) }
    /// Drops unwritten output (the connection is gone).
    package func discardOutput() { output.consume(output.pending) }

    /// Whether nghttp2 still expects frames from the peer / has frames to send: both false means the
    /// session is finished (GOAWAY exchanged and every stream closed).
    package var wantsRead: Bool { nghttp2_session_want_read(session) != 0 }
    package var wantsWrite: Bool { nghttp2_session_want_write(session) != 0 }

    /// The peer's SETTINGS_MAX_CONCURRENT_STREAMS as last announced (nghttp2 assumes 100 until then).
    package var remoteMaximumConcurrentStreams: Int {
        Int(nghttp2_session_get_remote_settings(session, NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS))
    }

    /// Our stream data for `streamID` (nil for unknown streams).
    package func streamUserData(_ streamID: Int32) -> UnsafeMutableRawPointer? {
        nghttp2_session_get_stream_user_data(session, streamID)
    }

    // MARK: Frames to send

    /// Queues a request with `headers` (nghttp2 copies them) and, when `hasBody`, a body pulled from
    /// the delegate's `sessionReadBody` with `streamUserData` as its source. Returns the stream id,
    /// or nghttp2's negative error (NGHTTP2_ERR_STREAM_ID_NOT_AVAILABLE: ids ran out, open a new connection).
    package func submitRequest(headers: UnsafePointer<nghttp2_nv>, count: Int, hasBody: Bool,
                              streamUserData: UnsafeMutableRawPointer?) -> Int32 {
        var provider = HTTP2Session.bodyProvider(source: streamUserData)
        return withUnsafePointer(to: &provider) { nghttp2_submit_request(session, nil, headers, count, hasBody ? $0 : nil, streamUserData) }
    }

    /// Queues a response on `streamID`; a body is pulled from the delegate with a nil source.
    package func submitResponse(streamID: Int32, headers: HeaderList, hasBody: Bool) throws(TransportError) {
        var provider = HTTP2Session.bodyProvider(source: nil)
        let rc = withUnsafePointer(to: &provider) {
            nghttp2_submit_response(session, streamID, headers.entries, headers.count, hasBody ? $0 : nil)
        }
        try Nghttp2.check(rc, "nghttp2_submit_response")
    }

    /// RST_STREAM with `errorCode` (e.g. CANCEL for a request past its deadline, REFUSED_STREAM).
    package func submitReset(streamID: Int32, errorCode: UInt32) throws(TransportError) {
        try Nghttp2.check(nghttp2_submit_rst_stream(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), streamID, errorCode), "nghttp2_submit_rst_stream")
    }

    package func submitGoAway(lastStreamID: Int32, errorCode: UInt32, debugData: [UInt8]) throws(TransportError) {
        let rc = debugData.withUnsafeBufferPointer {
            nghttp2_submit_goaway(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), lastStreamID, errorCode, $0.baseAddress, $0.count)
        }
        try Nghttp2.check(rc, "nghttp2_submit_goaway")
    }

    /// GOAWAY naming the last stream we processed, once the streams in flight are done.
    package func terminate(errorCode: UInt32) throws(TransportError) {
        try Nghttp2.check(nghttp2_session_terminate_session(session, errorCode), "nghttp2_session_terminate_session")
    }

    package func submitPing() throws(TransportError) {
        try Nghttp2.check(nghttp2_submit_ping(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), nil), "nghttp2_submit_ping")
    }

    /// Announces a new SETTINGS_MAX_CONCURRENT_STREAMS (APNs lowers and raises it with load).
    package func submitMaximumConcurrentStreams(_ value: UInt32) throws(TransportError) {
        var entry = nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS.rawValue), value: value)
        try Nghttp2.check(nghttp2_submit_settings(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), &entry, 1), "nghttp2_submit_settings")
    }

    // MARK: nghttp2 callbacks (inside mem_recv / mem_send)

    private static func bodyProvider(source: UnsafeMutableRawPointer?) -> nghttp2_data_provider {
        var provider = nghttp2_data_provider()
        provider.source.ptr = source
        provider.read_callback = { _, streamID, buffer, length, flags, source, userData in
            var end = false
            let count = HTTP2Session.from(userData).delegate.sessionReadBody(streamID: streamID, source: source?.pointee.ptr,
                                                                             into: buffer!, length: length, endOfData: &end)
            if end { flags!.pointee |= UInt32(NGHTTP2_DATA_FLAG_EOF.rawValue) }
            return count
        }
        return provider
    }

    @inline(__always)
    private static func from(_ userData: UnsafeMutableRawPointer?) -> HTTP2Session {
        Unmanaged<HTTP2Session>.fromOpaque(userData!).takeUnretainedValue()
    }

    // nonisolated(unsafe): built once, then only read by nghttp2_session_*_new (which copies it).
    nonisolated(unsafe) private static let callbacks: OpaquePointer = {
        var callbacks: OpaquePointer?
        precondition(nghttp2_session_callbacks_new(&callbacks) == 0 && callbacks != nil, "nghttp2_session_callbacks_new: out of memory")
        nghttp2_session_callbacks_set_on_begin_headers_callback(callbacks) { _, frame, userData in
            guard let frame, frame.pointee.hd.type == UInt8(NGHTTP2_HEADERS.rawValue) else { return 0 }
            HTTP2Session.from(userData).delegate.sessionBeganHeaders(streamID: frame.pointee.hd.stream_id)
            return 0
        }
        nghttp2_session_callbacks_set_on_header_callback(callbacks) { _, frame, name, nameLength, value, valueLength, _, userData in
            guard let frame, frame.pointee.hd.type == UInt8(NGHTTP2_HEADERS.rawValue) else { return 0 }
            HTTP2Session.from(userData).delegate.sessionReceivedHeader(
                streamID: frame.pointee.hd.stream_id, name: UnsafeBufferPointer(start: name, count: nameLength),
                value: UnsafeBufferPointer(start: value, count: valueLength))
            return 0
        }
        nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks) { _, _, streamID, data, length, userData in
            HTTP2Session.from(userData).delegate.sessionReceivedData(streamID: streamID, data: UnsafeBufferPointer(start: data, count: length))
            return 0
        }
        nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks) { _, frame, userData in
            guard let frame else { return 0 }
            let delegate = HTTP2Session.from(userData).delegate
            let header = frame.pointee.hd
            switch header.type {
            case UInt8(NGHTTP2_HEADERS.rawValue), UInt8(NGHTTP2_DATA.rawValue):
                if header.flags & UInt8(NGHTTP2_FLAG_END_STREAM.rawValue) != 0 { delegate.sessionReceivedEndOfStream(streamID: header.stream_id) }
            case UInt8(NGHTTP2_PING.rawValue):
                if header.flags & UInt8(NGHTTP2_FLAG_ACK.rawValue) != 0 { delegate.sessionReceivedPingAcknowledgement() }
            case UInt8(NGHTTP2_GOAWAY.rawValue):
                let goaway = frame.pointee.goaway
                delegate.sessionReceivedGoAway(lastStreamID: goaway.last_stream_id, errorCode: goaway.error_code,
                                               debugData: UnsafeBufferPointer(start: goaway.opaque_data, count: goaway.opaque_data_len))
            default:
                break
            }
            return 0
        }
        nghttp2_session_callbacks_set_on_frame_send_callback(callbacks) { _, frame, userData in
            guard let frame, frame.pointee.hd.type == UInt8(NGHTTP2_HEADERS.rawValue) else { return 0 }
            HTTP2Session.from(userData).delegate.sessionSentHeaders(streamID: frame.pointee.hd.stream_id)
            return 0
        }
        nghttp2_session_callbacks_set_on_frame_not_send_callback(callbacks) { session, frame, _, userData in
            guard let frame, frame.pointee.hd.type == UInt8(NGHTTP2_HEADERS.rawValue) else { return 0 }
            let streamID = frame.pointee.hd.stream_id
            HTTP2Session.from(userData).delegate.sessionCouldNotSendHeaders(
                streamID: streamID, userData: nghttp2_session_get_stream_user_data(session, streamID))
            return 0
        }
        nghttp2_session_callbacks_set_on_stream_close_callback(callbacks) { _, streamID, errorCode, userData in
            HTTP2Session.from(userData).delegate.sessionClosedStream(streamID: streamID, errorCode: errorCode)
            return 0
        }
        return callbacks!
    }()
}

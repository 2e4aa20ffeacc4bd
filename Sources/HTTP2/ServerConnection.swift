#if canImport(Glibc)
import Glibc
#endif
import CNghttp2
import Crypto

/// The server side of one HTTP/2-over-TLS connection (the simulator's). Collects each request,
/// hands it to the handler, and sends responses — at once or after a delay — plus the faults a test
/// needs: GOAWAY, RST_STREAM, an abrupt close, a changed stream limit.
public final class ServerConnection: EventLoopSource, @unchecked Sendable {
    // @unchecked: used only on its loop's thread.
    public let loop: EventLoop
    public let id: Int
    let handler: HTTP2RequestHandler
    private var tls: TLSStream
    private var session: OpaquePointer?
    private let allocator = SessionAllocator()
    private var handshakeDone = false
    private var tlsWantsWrite = false
    private var closed = false
    private var output = OutputBuffer(capacity: 64 * 1024)
    private var blockedWriteLength = 0
    private let input: UnsafeMutablePointer<UInt8>
    private let inputCapacity = 64 * 1024
    private var partial: [Int32: PartialRequest] = [:]
    /// Bodies of responses being sent, by stream.
    private var outgoing: [Int32: (body: [UInt8], offset: Int)] = [:]
    /// Responses held back until their time (latency injection), in due order.
    private var delayed: [(due: UInt64, streamID: Int32, response: ServerResponse)] = []
    private var delayedHead = 0
    public let maximumStreams: UInt32
    public private(set) var requestsReceived = 0
    private var goingAway = false
    /// Streams above this were refused by our GOAWAY: they must not be processed even if their
    /// HEADERS arrived in the same read as the request that triggered it.
    private var goAwayLastStreamID = Int32.max

    struct PartialRequest {
        var method = "", path = "", authority = ""
        var headers: [(name: String, value: String)] = []
        var body: [UInt8] = []
    }

    init(loop: EventLoop, fd: Int32, id: Int, tls configuration: TLSConfiguration, handler: HTTP2RequestHandler,
         maximumStreams: UInt32) throws(TransportError) {
        self.loop = loop
        self.id = id
        self.handler = handler
        self.maximumStreams = maximumStreams
        do { tls = try TLSStream(fd: fd, configuration: configuration, serverName: nil) } catch { throw .tls(error.message) }
        input = .allocate(capacity: inputCapacity)
    }

    deinit {
        if let session { nghttp2_session_del(session) }
        input.deallocate()
        output.free()
    }

    public var fileDescriptor: Int32 { closed ? -1 : tls.fileDescriptor }

    // MARK: Responding and faults

    /// Sends `response` on `streamID`, after `delay` nanoseconds if given.
    public func respond(streamID: Int32, _ response: ServerResponse, delay: UInt64 = 0) {
        guard !closed, !dropping, !stalled else { return }
        if delay > 0 {
            delayed.append((MonotonicClock.nanoseconds() &+ delay, streamID, response))
            return
        }
        guard let session else { return }
        var pairs = [(":status", String(response.status))] + response.headers.map { ($0.name, $0.value) }
        if !response.body.isEmpty { pairs.append(("content-length", String(response.body.count))) }
        let list = HeaderList(pairs.map { (name: $0.0, value: $0.1) })
        var provider = nghttp2_data_provider()
        provider.read_callback = { session, streamID, buffer, length, flags, _, userData in
            let connection = Unmanaged<ServerConnection>.fromOpaque(userData!).takeUnretainedValue()
            return connection.readBody(streamID: streamID, into: buffer!, length: length, flags: flags!)
        }
        if !response.body.isEmpty { outgoing[streamID] = (response.body, 0) }
        let rc = withUnsafePointer(to: &provider) {
            nghttp2_submit_response(session, streamID, list.entries, list.count, response.body.isEmpty ? nil : $0)
        }
        if rc != 0 { outgoing[streamID] = nil } else { handler.responseSent(response, on: self) }
    }

    /// Resets a stream with an HTTP/2 error code (e.g. REFUSED_STREAM = 7).
    public func reset(streamID: Int32, errorCode: UInt32) {
        guard let session, !closed else { return }
        nghttp2_submit_rst_stream(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), streamID, errorCode)
    }

    /// Sends GOAWAY naming `lastStreamID` with APNs' JSON `{"reason":…}` as debug data; the connection
    /// closes once the streams at or below it are answered. `reason` is put in unescaped: meant for
    /// APNs reason names (letters only); arbitrary text goes through `goAway(lastStreamID:errorCode:debugData:)`.
    public func goAway(lastStreamID: Int32, errorCode: UInt32 = 0, reason: String?) {
        goAway(lastStreamID: lastStreamID, errorCode: errorCode, debugData: reason.map { Array("{\"reason\":\"\($0)\"}".utf8) } ?? [])
    }

    /// Sends GOAWAY naming `lastStreamID` with `debugData` as given (the caller encodes it, so this
    /// module needs no JSON writer); the connection closes once the streams at or below it are answered.
    public func goAway(lastStreamID: Int32, errorCode: UInt32 = 0, debugData: [UInt8]) {
        guard let session, !closed, !goingAway, !stalled else { return }
        goingAway = true
        goAwayLastStreamID = lastStreamID
        nghttp2_submit_goaway(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), lastStreamID, errorCode, debugData, debugData.count)
    }

    /// Drops the TCP connection without GOAWAY: every request in flight has an unknown outcome.
    public func abort() {
        guard !closed else { return }
        var linger = linger(l_onoff: 1, l_linger: 0)  // RST instead of FIN
        setsockopt(tls.fileDescriptor, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<linger>.size))
        finish()
    }

    /// Stops answering: requests that arrive from now on are ignored, held-back answers are dropped,
    /// and once what was already answered is written the socket closes with a FIN and no GOAWAY. The
    /// client sees a connection lost with requests in flight (their outcome unknown), while every
    /// answer sent before really reaches it.
    public func drop() {
        guard !closed else { return }
        dropping = true
        delayed.removeAll()
        delayedHead = 0
    }

    private var dropping = false

    /// Goes silent, like a peer whose process hangs or a middlebox that black-holes one direction:
    /// from now on nothing more is written — no answers (also none held back by a delay, and none
    /// queued but not yet written), no PING or SETTINGS ACKs, no WINDOW_UPDATE — and incoming bytes
    /// are read and thrown away, so the client's writes never block. The socket stays open until the
    /// client closes it (or the server stops): the client has to notice by itself, e.g. by PING.
    public func stall() {
        guard !closed else { return }
        stalled = true
        delayed.removeAll()
        delayedHead = 0
    }

    private var stalled = false

    /// Announces a new SETTINGS_MAX_CONCURRENT_STREAMS.
    public func setMaximumStreams(_ value: UInt32) {
        guard let session, !closed else { return }
        var entry = nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS.rawValue), value: value)
        nghttp2_submit_settings(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), &entry, 1)
    }

    // MARK: EventLoopSource

    public func prepare(now: UInt64) -> Bool {
        guard !closed else { return false }
        // Silent: never write, and never close on our own (nghttp2 may think it is done).
        if stalled { return false }
        while delayedHead < delayed.count, delayed[delayedHead].due <= now {
            let item = delayed[delayedHead]
            delayedHead += 1
            respond(streamID: item.streamID, item.response)
        }
        if delayedHead > 1024 && delayedHead * 2 > delayed.count {
            delayed.removeFirst(delayedHead)
            delayedHead = 0
        }
        if handshakeDone { flush() }
        if closed { return false }
        if dropping && output.isEmpty && blockedWriteLength == 0 {
            finish()
            return false
        }
        if let session, handshakeDone, nghttp2_session_want_read(session) == 0, nghttp2_session_want_write(session) == 0,
           output.isEmpty, blockedWriteLength == 0 {
            finish()
            return false
        }
        return !output.isEmpty || blockedWriteLength > 0 || (!handshakeDone && tlsWantsWrite)
    }

    public func handle(events: UInt32, now: UInt64) {
        guard !closed else { return }
        if !handshakeDone {
            switch tls.handshake() {
            case .wantRead: tlsWantsWrite = false
            case .wantWrite: tlsWantsWrite = true
            case .failed: finish(); return
            case .done:
                guard tls.negotiatedProtocol == "h2", startSession() else { finish(); return }
                handshakeDone = true
                handler.connectionOpened(self)
            }
            if !handshakeDone { return }
        }
        if stalled { discardAvailable(); return }
        readAvailable()
        if !closed, !stalled { flush() }
    }

    /// The next delayed response is due: the loop must not sleep past it.
    public func tick(now: UInt64) {}

    var hasDelayedResponses: Bool { delayedHead < delayed.count }

    private func startSession() -> Bool {
        var newSession: OpaquePointer?
        guard nghttp2_session_server_new3(&newSession, ServerConnection.callbacks, Unmanaged.passUnretained(self).toOpaque(),
                                          nil, allocator.mem) == 0,
              let newSession else { return false }
        session = newSession
        var settings = [
            nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS.rawValue), value: maximumStreams),
            nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE.rawValue), value: 1 << 20),
        ]
        nghttp2_submit_settings(newSession, UInt8(NGHTTP2_FLAG_NONE.rawValue), &settings, settings.count)
        nghttp2_session_set_local_window_size(newSession, UInt8(NGHTTP2_FLAG_NONE.rawValue), 0, 16 << 20)
        return true
    }

    private func readAvailable() {
        guard let session else { return }
        while !closed, !stalled {  // a stall stops the decoding: what follows is read raw and dropped
            switch tls.read(into: input, capacity: inputCapacity) {
            case let .bytes(count):
                if nghttp2_session_mem_recv(session, input, count) < 0 { finish(); return }
            case .wouldBlock: return
            case .closed, .failed: finish(); return
            }
        }
    }

    /// A stalled connection still drains its socket (epoll is level-triggered, and a full receive
    /// buffer would block the client's writes), closing only when the client does. The bytes are
    /// not decrypted: decrypting could make TLS want to write, and a silent peer writes nothing.
    private func discardAvailable() {
        while !closed {
            let count = recv(tls.fileDescriptor, input, inputCapacity, Int32(MSG_DONTWAIT))
            if count > 0 { continue }
            if count < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) { return }
            finish()  // 0: the client closed; < 0: the connection failed
            return
        }
    }

    private func flush() {
        guard let session else { return }
        while !closed {
            if blockedWriteLength == 0 {
                while output.pending < 16 * 1024 {
                    var data: UnsafePointer<UInt8>?
                    let produced = nghttp2_session_mem_send(session, &data)
                    if produced < 0 { finish(); return }
                    if produced == 0 { break }
                    output.append(data!, count: produced)
                }
            }
            if output.isEmpty { return }
            let length = blockedWriteLength > 0 ? blockedWriteLength : min(output.pending, 16 * 1024)
            switch tls.write(output.base + output.start, count: length) {
            case let .bytes(written): blockedWriteLength = 0; output.consume(written)
            case .wouldBlock: blockedWriteLength = length; return
            case .closed, .failed: finish(); return
            }
        }
    }

    private func finish() {
        guard !closed else { return }
        loop.remove(self)
        closed = true
        tls.closeNotify()
        if let session { nghttp2_session_del(session); self.session = nil }
        _ = Glibc.shutdown(tls.fileDescriptor, Int32(SHUT_RDWR))
        handler.connectionClosed(self)
    }

    // MARK: nghttp2 callbacks

    fileprivate func readBody(streamID: Int32, into buffer: UnsafeMutablePointer<UInt8>, length: Int, flags: UnsafeMutablePointer<UInt32>) -> Int {
        guard var entry = outgoing[streamID] else {
            flags.pointee |= UInt32(NGHTTP2_DATA_FLAG_EOF.rawValue)
            return 0
        }
        let count = min(length, entry.body.count - entry.offset)
        entry.body.withUnsafeBufferPointer { buffer.update(from: $0.baseAddress! + entry.offset, count: count) }
        entry.offset += count
        if entry.offset == entry.body.count {
            flags.pointee |= UInt32(NGHTTP2_DATA_FLAG_EOF.rawValue)
            outgoing[streamID] = nil
        } else {
            outgoing[streamID] = entry
        }
        return count
    }

    fileprivate func onBeginHeaders(streamID: Int32) { partial[streamID] = PartialRequest() }

    fileprivate func onHeader(streamID: Int32, name: String, value: String) {
        guard partial[streamID] != nil else { return }
        switch name {
        case ":method": partial[streamID]!.method = value
        case ":path": partial[streamID]!.path = value
        case ":authority": partial[streamID]!.authority = value
        case ":scheme": break
        default: partial[streamID]!.headers.append((name, value))
        }
    }

    fileprivate func onData(streamID: Int32, data: UnsafeBufferPointer<UInt8>) {
        guard partial[streamID] != nil else { return }
        partial[streamID]!.body.append(contentsOf: data)
    }

    fileprivate func onRequestComplete(streamID: Int32) {
        guard let request = partial.removeValue(forKey: streamID), !dropping, !stalled else { return }
        if streamID > goAwayLastStreamID {
            reset(streamID: streamID, errorCode: UInt32(NGHTTP2_REFUSED_STREAM.rawValue))
            return
        }
        requestsReceived += 1
        handler.handle(ServerRequest(streamID: streamID, method: request.method, path: request.path, authority: request.authority,
                                     headers: request.headers, body: request.body), on: self)
    }

    fileprivate func onStreamClose(streamID: Int32) {
        partial[streamID] = nil
        outgoing[streamID] = nil
    }

    // nonisolated(unsafe): built once, then only read by nghttp2_session_server_new (which copies it).
    nonisolated(unsafe) private static let callbacks: OpaquePointer = {
        var callbacks: OpaquePointer?
        nghttp2_session_callbacks_new(&callbacks)
        nghttp2_session_callbacks_set_on_begin_headers_callback(callbacks) { _, frame, userData in
            guard let frame, frame.pointee.hd.type == UInt8(NGHTTP2_HEADERS.rawValue) else { return 0 }
            Unmanaged<ServerConnection>.fromOpaque(userData!).takeUnretainedValue().onBeginHeaders(streamID: frame.pointee.hd.stream_id)
            return 0
        }
        nghttp2_session_callbacks_set_on_header_callback(callbacks) { _, frame, name, nameLength, value, valueLength, _, userData in
            guard let frame else { return 0 }
            Unmanaged<ServerConnection>.fromOpaque(userData!).takeUnretainedValue().onHeader(
                streamID: frame.pointee.hd.stream_id,
                name: String(decoding: UnsafeBufferPointer(start: name, count: nameLength), as: UTF8.self),
                value: String(decoding: UnsafeBufferPointer(start: value, count: valueLength), as: UTF8.self))
            return 0
        }
        nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks) { _, _, streamID, data, length, userData in
            Unmanaged<ServerConnection>.fromOpaque(userData!).takeUnretainedValue().onData(
                streamID: streamID, data: UnsafeBufferPointer(start: data, count: length))
            return 0
        }
        nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks) { _, frame, userData in
            guard let frame else { return 0 }
            let type = frame.pointee.hd.type
            let endStream = frame.pointee.hd.flags & UInt8(NGHTTP2_FLAG_END_STREAM.rawValue) != 0
            if endStream, type == UInt8(NGHTTP2_HEADERS.rawValue) || type == UInt8(NGHTTP2_DATA.rawValue) {
                Unmanaged<ServerConnection>.fromOpaque(userData!).takeUnretainedValue().onRequestComplete(streamID: frame.pointee.hd.stream_id)
            }
            return 0
        }
        nghttp2_session_callbacks_set_on_stream_close_callback(callbacks) { _, streamID, _, userData in
            Unmanaged<ServerConnection>.fromOpaque(userData!).takeUnretainedValue().onStreamClose(streamID: streamID)
            return 0
        }
        return callbacks!
    }()
}

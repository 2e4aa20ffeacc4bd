#if canImport(Glibc)
import Glibc
#endif
import CNghttp2
import Crypto
import IO

/// The server side of one HTTP/2-over-TLS connection (the simulator's): the TLS handshake, then an
/// `HTTP2Session` pumped through the TLS stream like the client's. Collects each request, hands it
/// to the handler, and sends responses — at once or after a delay — plus the faults a test needs:
/// GOAWAY, RST_STREAM, an abrupt close, a drop, a stall, a changed stream limit.
public final class ServerConnection: EventLoopSource, @unchecked Sendable {
    // @unchecked: used only on its loop's thread.
    public let loop: EventLoop
    public let id: Int
    let handler: HTTP2RequestHandler
    private let tls: TLSStream
    private var session: HTTP2Session?
    private var pump = TLSPump()
    private var tlsWantsWrite = false
    private var closed = false
    var partial: [Int32: PartialRequest] = [:]
    /// Bodies of responses being sent, by stream.
    var outgoing: [Int32: (body: [UInt8], offset: Int)] = [:]
    /// Responses held back until their time (latency injection), in due order (one latency per server).
    /// Answers held back, one first-in-first-out lane per delay: within a lane the due times are in
    /// order, so no heap is needed, and an answer held for long (a fault run's slower-than-the-
    /// deadline one) does not hold back the quick answers queued after it (one shared queue did:
    /// every later answer waited behind it, and the whole connection looked stalled).
    private struct DelayLane {
        let delay: Duration
        var items: [(due: MonotonicInstant, streamID: Int32, response: ServerResponse)] = []
        var head = 0
        var nextDue: MonotonicInstant? { head < items.count ? items[head].due : nil }
    }
    private var lanes: [DelayLane] = []
    private lazy var delayTimer = LoopTimer { [unowned self] now in self.sendDueResponses(now: now) }
    public let maximumStreams: UInt32
    public internal(set) var requestsReceived = 0
    private var goingAway = false
    /// Streams above this were refused by our GOAWAY: they must not be processed even if their
    /// HEADERS arrived in the same read as the request that triggered it.
    var goAwayLastStreamID = Int32.max
    var dropping = false
    var stalled = false
    /// Done after a GOAWAY: our side is closed (close_notify, FIN) and what the client still sends
    /// is read and dropped until it closes, or `lingerLimit` passes. Closing at once with its
    /// requests unread in the socket would send a RST, and the client's kernel would drop the last
    /// answers and the GOAWAY itself before the client read them: every push in flight would look
    /// unknown (a fault run saw whole connections end that way).
    private var lingering = false
    private static let lingerLimit: Duration = .seconds(2)
    private lazy var lingerTimer = LoopTimer { [unowned self] _ in self.finish() }
    private let scratch: UnsafeMutablePointer<UInt8>
    private static let scratchCapacity = 64 * 1024

    struct PartialRequest {
        var method = "", path = "", authority = ""
        var headers: [(name: String, value: String)] = []
        var body: [UInt8] = []
    }

    /// Takes over `socket` (an accepted connection): on success the TLS stream owns it.
    init(loop: EventLoop, socket: consuming FileDescriptor, id: Int, tls configuration: TLSConfiguration, handler: HTTP2RequestHandler,
         maximumStreams: UInt32) throws(TransportError) {
        self.loop = loop
        self.id = id
        self.handler = handler
        self.maximumStreams = maximumStreams
        do throws(TLSError) {
            tls = try TLSStream(fd: socket.rawValue, configuration: configuration, serverName: nil)
        } catch {
            throw .tls(error.message)
        }
        _ = socket.release()
        scratch = .allocate(capacity: Self.scratchCapacity)
    }

    deinit { scratch.deallocate() }

    public var fileDescriptor: Int32 { closed ? -1 : tls.fileDescriptor }

    // MARK: Responding and faults

    /// Sends `response` on `streamID`, after `delay` if given.
    public func respond(streamID: Int32, _ response: ServerResponse, delay: Duration = .zero) {
        guard !closed, !dropping, !stalled else { return }
        if delay > .zero {
            let due = MonotonicInstant.now() + delay
            if let index = lanes.firstIndex(where: { $0.delay == delay }) {
                lanes[index].items.append((due, streamID, response))
            } else {
                lanes.append(DelayLane(delay: delay, items: [(due, streamID, response)]))
            }
            if !delayTimer.isArmed || (delayTimer.deadline.map { $0 > due } ?? true) { loop.arm(delayTimer, at: due) }
            return
        }
        guard let session else { return }
        var pairs = [(":status", String(response.status))] + response.headers.map { ($0.name, $0.value) }
        if !response.body.isEmpty { pairs.append(("content-length", String(response.body.count))) }
        let list = HeaderList(pairs.map { (name: $0.0, value: $0.1) })
        if !response.body.isEmpty { outgoing[streamID] = (response.body, 0) }
        do throws(TransportError) {
            try session.submitResponse(streamID: streamID, headers: list, hasBody: !response.body.isEmpty)
            handler.responseSent(response, on: self)
        } catch {
            outgoing[streamID] = nil  // the stream is gone (reset by the client): nothing to answer
        }
    }

    /// Resets a stream with an HTTP/2 error code (e.g. REFUSED_STREAM = 7).
    public func reset(streamID: Int32, errorCode: UInt32) {
        guard let session, !closed else { return }
        try? session.submitReset(streamID: streamID, errorCode: errorCode)  // fails only for a stream already gone
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
        do throws(TransportError) { try session.submitGoAway(lastStreamID: lastStreamID, errorCode: errorCode, debugData: debugData) } catch {
            finish()
        }
    }

    /// Drops the TCP connection without GOAWAY: every request in flight has an unknown outcome.
    public func abort() {
        guard !closed else { return }
        var linger = linger(l_onoff: 1, l_linger: 0)  // RST instead of FIN
        let fd = tls.fileDescriptor
        // A socket that cannot linger still closes, with a FIN: the client sees it go all the same.
        _ = try? Syscall.check("setsockopt(SO_LINGER)") { setsockopt(fd, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<linger>.size)) }
        finish()
    }

    /// Stops answering: requests that arrive from now on are ignored, held-back answers are dropped,
    /// and once what was already answered is written the socket closes with a FIN and no GOAWAY. The
    /// client sees a connection lost with requests in flight (their outcome unknown), while every
    /// answer sent before really reaches it.
    public func drop() {
        guard !closed else { return }
        dropping = true
        clearDelayed()
    }

    /// Goes silent, like a peer whose process hangs or a middlebox that black-holes one direction:
    /// from now on nothing more is written — no answers (also none held back by a delay, and none
    /// queued but not yet written), no PING or SETTINGS ACKs, no WINDOW_UPDATE — and incoming bytes
    /// are read and thrown away, so the client's writes never block. The socket stays open until the
    /// client closes it (or the server stops): the client has to notice by itself, e.g. by PING.
    public func stall() {
        guard !closed else { return }
        stalled = true
        clearDelayed()
    }

    /// Announces a new SETTINGS_MAX_CONCURRENT_STREAMS.
    public func setMaximumStreams(_ value: UInt32) {
        guard let session, !closed else { return }
        try? session.submitMaximumConcurrentStreams(value)  // fails only when nghttp2 is out of memory
    }

    private func clearDelayed() {
        lanes.removeAll()
        loop.disarm(delayTimer)
    }

    private func sendDueResponses(now: MonotonicInstant) {
        for index in lanes.indices {
            while let due = lanes[index].nextDue, due <= now {
                let item = lanes[index].items[lanes[index].head]
                lanes[index].head += 1
                respond(streamID: item.streamID, item.response)
                // `respond` may have closed the connection (and cleared the lanes).
                guard index < lanes.count else { return }
            }
            if lanes[index].head > 1024 && lanes[index].head * 2 > lanes[index].items.count {
                lanes[index].items.removeFirst(lanes[index].head)
                lanes[index].head = 0
            }
        }
        if let next = lanes.compactMap(\.nextDue).min() { loop.arm(delayTimer, at: next) }
    }

    // MARK: EventLoopSource

    public func prepare(now: MonotonicInstant) -> Bool {
        guard !closed else { return false }
        // Silent: never write, and never close on our own (nghttp2 may think it is done).
        if stalled || lingering { return false }
        guard let session else { return tlsWantsWrite }
        flush(session)
        if closed { return false }
        if dropping && !session.hasPendingOutput && !pump.isBlocked {
            finish()
            return false
        }
        if !session.wantsRead, !session.wantsWrite, !session.hasPendingOutput, !pump.isBlocked {
            // After our GOAWAY the client may still be sending: close gracefully. After the
            // client's, it is done sending: close now.
            if goingAway { closeGracefully() } else { finish() }
            return false
        }
        return session.hasPendingOutput || pump.isBlocked
    }

    public func handle(events: UInt32, now: MonotonicInstant) {
        guard !closed else { return }
        if self.session == nil { continueHandshake() }
        // Records that arrived with the handshake's last flight are already inside mbedTLS: read on.
        guard let session, !closed else { return }
        if stalled || lingering { discardAvailable(); return }
        switch pump.read(from: tls, into: session, stillOpen: { [unowned self] in !self.closed && !self.stalled }) {
        case .ok: break
        case .closed, .failed: finish(); return
        }
        if !closed, !stalled { flush(session) }
    }

    private func continueHandshake() {
        switch tls.handshake() {
        case .wantRead: tlsWantsWrite = false
        case .wantWrite: tlsWantsWrite = true
        case .failed: finish()
        case .done:
            guard tls.negotiatedProtocol == "h2",
                  let started = try? HTTP2Session(role: .server, delegate: self, maximumConcurrentStreams: maximumStreams) else {
                finish()
                return
            }
            session = started
            handler.connectionOpened(self)
        }
    }

    /// A stalled connection still drains its socket (epoll is level-triggered, and a full receive
    /// buffer would block the client's writes), closing only when the client does. The bytes are
    /// not decrypted: decrypting could make TLS want to write, and a silent peer writes nothing.
    private func discardAvailable() {
        let fd = tls.fileDescriptor
        while !closed {
            do throws(TransportError) {
                guard let count = try Syscall.transfer("recv", { recv(fd, scratch, Self.scratchCapacity, Int32(MSG_DONTWAIT)) }) else { return }
                if count == 0 { finish(); return }  // the client closed
            } catch {
                finish()
                return
            }
        }
    }

    private func flush(_ session: HTTP2Session) {
        switch pump.flush(session, to: tls) {
        case .ok: break
        case .closed, .failed: finish()
        }
    }

    /// The graceful end (see `lingering`).
    private func closeGracefully() {
        guard !lingering, !closed else { return }
        lingering = true
        session = nil
        tls.closeNotify()
        let fd = tls.fileDescriptor
        _ = try? Syscall.check("shutdown") { Glibc.shutdown(fd, Int32(SHUT_WR)) }
        loop.arm(lingerTimer, at: MonotonicInstant.now() + Self.lingerLimit)
    }

    private func finish() {
        guard !closed else { return }
        loop.remove(self)
        loop.disarm(delayTimer)
        loop.disarm(lingerTimer)
        closed = true
        tls.closeNotify()
        session = nil
        let fd = tls.fileDescriptor
        // The peer may be gone already (ENOTCONN): the socket closes with the TLS stream either way.
        _ = try? Syscall.check("shutdown") { Glibc.shutdown(fd, Int32(SHUT_RDWR)) }
        handler.connectionClosed(self)
    }
}

#if canImport(Glibc)
import Glibc
#endif
import CMbedTLS
import CNghttp2
import Crypto

/// What a client connection tells its owner. All calls arrive on the connection's loop thread.
public protocol ClientConnectionDelegate: AnyObject {
    /// TLS and the HTTP/2 preface are done; requests may be submitted.
    func connectionDidOpen(_ connection: ClientConnection)
    /// Called every loop turn while the connection can take `capacity` more streams: submit now.
    func connection(_ connection: ClientConnection, canSubmit capacity: Int)
    /// A response arrived for the request submitted with `tag`.
    func connection(_ connection: ClientConnection, didReceive response: ResponseView, tag: UInt64)
    /// The request submitted with `tag` ended without a response.
    func connection(_ connection: ClientConnection, didFail failure: StreamFailure, tag: UInt64)
    /// The connection is closed (every open request was failed first). `error` is nil after a
    /// clean GOAWAY drain or `close()`.
    func connection(_ connection: ClientConnection, didClose error: TransportError?, goAway: GoAwayInfo?)
}

/// What a server said in its GOAWAY frame.
public struct GoAwayInfo: Sendable, Equatable {
    public let lastStreamID: Int32
    public let errorCode: UInt32
    /// The frame's debug data; APNs puts `{"reason":"…"}` JSON there.
    public let debugData: String
}

/// Settings of one client connection.
public struct ClientConnectionOptions: Sendable {
    public var host: String
    public var port: Int
    /// The name sent as SNI and checked against the certificate (defaults to `host`).
    public var serverName: String?
    public var tls: TLSConfiguration
    /// Our own cap on concurrent streams (the server's SETTINGS may lower it further).
    public var maximumStreams: Int = 1000
    /// APNs allows one stream on a new token connection until a request succeeds (APNS.md §6).
    public var oneStreamUntilFirstSuccess = true
    /// Each address's TCP connect, the name lookup and the TLS handshake each get this long.
    public var connectTimeout: UInt64 = 10_000_000_000
    /// RFC 8305 (Happy Eyeballs): the next address is tried after this head start, while the
    /// earlier attempt may still finish, so an address that drops packets costs 250 ms, not a timeout.
    public var nextAddressDelay: UInt64 = 250_000_000
    /// How host names become addresses (run off the loop thread).
    public var resolver: NameResolver = { host, port throws(TransportError) in try SocketAddress.resolve(host: host, port: port) }
    /// A PING is sent after this long without any frame received while nothing is in flight (APNs: about an hour).
    public var pingAfterIdle: UInt64 = 3_600_000_000_000
    /// A PING is sent after this long without any byte received while streams are in flight: a
    /// connection that went silent (TCP open, peer gone or wedged) is found in seconds, not when
    /// its requests' deadlines pass one by one.
    public var pingAfterSilence: UInt64 = 2_000_000_000
    /// A PING not answered within this long means the peer is gone: the connection is closed and its
    /// in-flight streams fail (unknown). No new stream is submitted while a PING is outstanding.
    public var pingTimeout: UInt64 = 2_000_000_000

    public init(host: String, port: Int, serverName: String? = nil, tls: TLSConfiguration) {
        self.host = host
        self.port = port
        self.serverName = serverName
        self.tls = tls
    }
}

/// One HTTP/2 client connection over TLS: a non-blocking socket, an mbedTLS session and an nghttp2
/// session, confined to one `EventLoop` thread. Requests are submitted with a caller's `tag` and
/// come back through the delegate; no Swift allocation happens per request (stream state lives in
/// reused slots, payloads and header lists are shared references).
public final class ClientConnection: EventLoopSource, @unchecked Sendable {
    // @unchecked: every member is used only on `loop`'s thread (see the type's documentation).
    public enum State: Equatable, Sendable { case idle, connecting, handshaking, open, draining, closed }

    public let loop: EventLoop
    public let options: ClientConnectionOptions
    public weak var delegate: ClientConnectionDelegate?
    public private(set) var state: State = .idle

    /// Addresses not tried yet (interleaved by family), the connects under way, and whether the
    /// lookup has answered; `connectRound` tells a late lookup result of an earlier round to go away.
    private var pendingAddresses: [SocketAddress] = []
    private var attempts: [ConnectAttempt] = []
    private var addressesResolved = false
    private var nextAttemptAt: UInt64 = 0
    private var connectRound = 0
    private var handshakeStarted: UInt64 = 0
    private var rawFD: Int32 = -1
    private var tls: TLSStream?
    private var session: OpaquePointer?
    private var output = OutputBuffer(capacity: 64 * 1024)
    /// Length of an mbedTLS write that returned WANT_WRITE: the retry must use the same length.
    private var blockedWriteLength = 0
    private let input: UnsafeMutablePointer<UInt8>
    private let inputCapacity = 64 * 1024
    private var connectStarted: UInt64 = 0
    private var lastReceived: UInt64 = 0
    /// When the current silence began: the last byte received, or the first stream submitted after
    /// the connection had none in flight (a long idle gap is not silence of a busy peer).
    private var silentSince: UInt64 = 0
    private var pingOutstanding = false
    private var pingSentAt: UInt64 = 0
    /// PINGs sent after idle periods, and the ACKs that came back.
    public private(set) var pingsSent = 0
    public private(set) var pingsAcknowledged = 0
    private var closeError: TransportError?
    private var lastConnectError: TransportError?
    private var goAway: GoAwayInfo?

    /// nghttp2's memory for this connection's sessions (reused across reconnects).
    private let allocator = SessionAllocator()
    private var slots: [StreamSlot]
    private var freeSlots: [Int32]
    public private(set) var activeStreams = 0
    /// Whether a request on this connection has been answered with 2xx (lifts the one-stream start).
    public private(set) var hadSuccess = false
    /// Requests answered since the last `connect()` (any status).
    public private(set) var responsesReceived = 0
    /// Requests submitted since the last `connect()`.
    public private(set) var streamsSubmitted = 0

    private let authority: [UInt8]
    private var authorization: [UInt8] = []
    private let scratch: UnsafeMutablePointer<nghttp2_nv>
    private let scratchCapacity = 64
    private static let methodName = Array(":method".utf8), schemeName = Array(":scheme".utf8)
    private static let authorityName = Array(":authority".utf8), pathName = Array(":path".utf8)
    private static let https = Array("https".utf8), authorizationName = Array("authorization".utf8)

    public init(loop: EventLoop, options: ClientConnectionOptions) {
        self.loop = loop
        self.options = options
        let cap = max(1, options.maximumStreams)
        slots = Array(repeating: StreamSlot(), count: cap)
        freeSlots = (0..<Int32(cap)).reversed().map { $0 }
        input = .allocate(capacity: inputCapacity)
        scratch = .allocate(capacity: scratchCapacity)
        authority = Array((options.port == 443 ? options.host : "\(options.host):\(options.port)").utf8)
    }

    deinit {
        if let session { nghttp2_session_del(session) }
        if tls == nil, rawFD >= 0 { Glibc.close(rawFD) }
        input.deallocate()
        scratch.deallocate()
        output.free()
    }

    public var fileDescriptor: Int32 { tls?.fileDescriptor ?? rawFD }

    /// The bearer token value sent as `authorization` from now on (`bearer <jwt>`); the pool swaps it
    /// per provider-token generation. Empty means no authorization header.
    public func setAuthorization(_ value: String) { authorization = Array(value.utf8) }

    /// How many more requests the connection accepts now.
    public var capacity: Int {
        guard state == .open, let session else { return 0 }
        var limit = Int(nghttp2_session_get_remote_settings(session, NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS))
        limit = min(limit, slots.count)
        if options.oneStreamUntilFirstSuccess && !hadSuccess { limit = 1 }
        if pingOutstanding { return 0 }  // is the peer still there? Hand it nothing more until it says so.
        return max(0, limit - activeStreams)
    }

    /// Starts connecting (from `.idle` or `.closed`). Call on the loop thread.
    public func connect() {
        precondition(state == .idle || state == .closed, "connect() on a connection that is \(state)")
        closeError = nil
        goAway = nil
        hadSuccess = false
        closeRequested = false
        terminated = false
        responsesReceived = 0
        streamsSubmitted = 0
        lastConnectError = nil
        pingOutstanding = false
        // .connecting first: a failure from here on goes through finishClose, which tells the delegate
        // (from .closed it would return early, and a reconnecting pool would never hear of it).
        loop.add(self)
        state = .connecting
        connectStarted = MonotonicClock.nanoseconds()
        guard (1...65535).contains(options.port) else {
            // getaddrinfo would wrap it (70000 becomes 4464) and connect somewhere else.
            finishClose(.resolve(host: options.host, message: "port \(options.port) is outside 1…65535"))
            return
        }
        addressesResolved = false
        connectRound &+= 1
        let round = connectRound
        NameResolution.start(host: options.host, port: options.port, resolver: options.resolver, on: loop) { [self] result in
            self.resolved(result, round: round)
        }
    }

    private func resolved(_ result: Result<[SocketAddress], TransportError>, round: Int) {
        guard round == connectRound, state == .connecting, !addressesResolved else { return }
        switch result {
        case let .failure(error):
            finishClose(error)
        case let .success(addresses):
            addressesResolved = true
            pendingAddresses = NameResolution.interleaved(addresses)
            startNextAttempt(now: MonotonicClock.nanoseconds())
        }
    }

    /// Starts a connect to the next address; when none is left and none is under way, the
    /// connection fails with the last address's error.
    private func startNextAttempt(now: UInt64) {
        while !pendingAddresses.isEmpty {
            let address = pendingAddresses.removeFirst()
            do {
                let attempt = try ConnectAttempt(address: address, now: now) { [unowned self] attempt, error in
                    self.attemptFinished(attempt, error: error)
                }
                attempts.append(attempt)
                loop.add(attempt)
                nextAttemptAt = now &+ options.nextAddressDelay
                return
            } catch {
                lastConnectError = error
            }
        }
        if attempts.isEmpty {
            finishClose(lastConnectError ?? .connect("\(options.host):\(options.port)", ECONNREFUSED))
        }
    }

    /// The first attempt to connect wins; the others are closed. A failed one makes room for the next address at once.
    private func attemptFinished(_ attempt: ConnectAttempt, error: Int32) {
        guard state == .connecting, let index = attempts.firstIndex(where: { $0 === attempt }) else { return }
        attempts.remove(at: index)
        let now = MonotonicClock.nanoseconds()
        if error != 0 {
            attempt.cancel(on: loop)
            lastConnectError = .connect(attempt.address.description, error)
            if attempts.isEmpty { startNextAttempt(now: now) }
            return
        }
        rawFD = attempt.takeDescriptor(from: loop)
        cancelAttempts()
        do {
            tls = try TLSStream(fd: rawFD, configuration: options.tls, serverName: options.serverName ?? options.host)
        } catch {
            finishClose(.tls(error.message))
            return
        }
        state = .handshaking
        handshakeStarted = now
        continueHandshake()
    }

    private func cancelAttempts() {
        for attempt in attempts { attempt.cancel(on: loop) }
        attempts.removeAll()
        pendingAddresses.removeAll()
    }

    /// Submits a request; returns false (and calls nothing) when the connection cannot take it now.
    /// `path` is copied at once; `headers` and `body` are retained until the stream ends.
    @discardableResult
    public func submit(method: StaticString, path: UnsafeRawBufferPointer, headers: HeaderList,
                       body: SharedBytes?, deadline: UInt64, tag: UInt64) -> Bool {
        guard state == .open, let session, let slotIndex = freeSlots.popLast() else { return false }
        let needed = 4 + (authorization.isEmpty ? 0 : 1) + headers.count
        guard needed <= scratchCapacity else { freeSlots.append(slotIndex); return false }

        var count = 0
        func put(_ name: UnsafePointer<UInt8>, _ nameLength: Int, _ value: UnsafePointer<UInt8>, _ valueLength: Int) {
            scratch[count] = nghttp2_nv(name: UnsafeMutablePointer(mutating: name), value: UnsafeMutablePointer(mutating: value),
                                        namelen: nameLength, valuelen: valueLength, flags: UInt8(NGHTTP2_NV_FLAG_NONE.rawValue))
            count += 1
        }
        let slot = Int(slotIndex)
        slots[slot].generation &+= 1
        let userData = StreamSlot.userData(index: slot, generation: slots[slot].generation)
        var dataProvider = nghttp2_data_provider()
        dataProvider.source.ptr = userData
        dataProvider.read_callback = { _, _, buffer, length, flags, source, userData in
            let connection = Unmanaged<ClientConnection>.fromOpaque(userData!).takeUnretainedValue()
            return connection.readBody(into: buffer!, length: length, flags: flags!, source: source!.pointee.ptr)
        }

        let streamID: Int32 = method.withUTF8Buffer { methodBytes in
            ClientConnection.methodName.withUnsafeBufferPointer { mn in
            ClientConnection.schemeName.withUnsafeBufferPointer { sn in
            ClientConnection.https.withUnsafeBufferPointer { sv in
            ClientConnection.authorityName.withUnsafeBufferPointer { an in
            authority.withUnsafeBufferPointer { av in
            ClientConnection.pathName.withUnsafeBufferPointer { pn in
            ClientConnection.authorizationName.withUnsafeBufferPointer { zn in
            authorization.withUnsafeBufferPointer { zv in
                put(mn.baseAddress!, mn.count, methodBytes.baseAddress!, methodBytes.count)
                put(sn.baseAddress!, sn.count, sv.baseAddress!, sv.count)
                put(an.baseAddress!, an.count, av.baseAddress!, av.count)
                put(pn.baseAddress!, pn.count, path.baseAddress!.assumingMemoryBound(to: UInt8.self), path.count)
                if zv.count > 0 { put(zn.baseAddress!, zn.count, zv.baseAddress!, zv.count) }
                for index in 0..<headers.count { scratch[count] = headers.entries[index]; count += 1 }
                // nghttp2 copies every name and value here (no NO_COPY flag), so nothing above must outlive the call.
                return withUnsafePointer(to: &dataProvider) { provider in
                    nghttp2_submit_request(session, nil, scratch, count, body == nil ? nil : provider, userData)
                }
            }}}}}}}}
        }
        guard streamID > 0 else {
            freeSlots.append(slotIndex)
            if streamID == NGHTTP2_ERR_STREAM_ID_NOT_AVAILABLE.rawValue { state = .draining }
            return false
        }
        slots[slot].begin(tag: tag, deadline: deadline, body: body, streamID: streamID)
        if activeStreams == 0 { silentSince = MonotonicClock.nanoseconds() }
        activeStreams += 1
        streamsSubmitted += 1
        return true
    }

    /// Convenience for callers that have the path as a String (CLI, tests).
    @discardableResult
    public func submit(method: StaticString, path: String, headers: HeaderList, body: SharedBytes?,
                       deadline: UInt64, tag: UInt64) -> Bool {
        var path = path
        return path.withUTF8 { submit(method: method, path: UnsafeRawBufferPointer($0), headers: headers, body: body, deadline: deadline, tag: tag) }
    }

    /// Stops taking requests, lets open streams finish, then sends GOAWAY and closes. Safe to call
    /// from a delegate callback: the teardown happens on the next loop turn, outside nghttp2.
    public func close() {
        switch state {
        case .open: state = .draining
        case .connecting, .handshaking: closeRequested = true; loop.wake()
        case .draining, .idle, .closed: break
        }
    }

    private var closeRequested = false
    private var terminated = false

    // MARK: EventLoopSource

    public func prepare(now: UInt64) -> Bool {
        if closeRequested && (state == .connecting || state == .handshaking) {
            finishClose(nil)
            return false
        }
        if state == .open, capacity > 0 { delegate?.connection(self, canSubmit: capacity) }
        if state == .open || state == .draining {
            if state == .draining && activeStreams == 0 && !terminated, let session {
                nghttp2_session_terminate_session(session, UInt32(NGHTTP2_NO_ERROR.rawValue))
                terminated = true
            }
            flush()
            if state == .draining && activeStreams == 0 && output.isEmpty && blockedWriteLength == 0 {
                finishClose(closeError)
                return false
            }
            return !output.isEmpty || blockedWriteLength > 0
        }
        // While connecting, the attempts are the loop's sources; the connection has no socket yet.
        return state == .handshaking && tlsWantsWrite
    }

    private var tlsWantsWrite = false

    public func handle(events: UInt32, now: UInt64) {
        switch state {
        case .handshaking:
            continueHandshake()
        case .open, .draining:
            // Only bytes count as a sign of life: a writable socket says nothing about the peer.
            if readAvailable() { lastReceived = now; silentSince = now }
            if state == .open || state == .draining { flush() }
        case .idle, .connecting, .closed:
            break
        }
    }

    public func tick(now: UInt64) {
        switch state {
        case .connecting:
            tickConnecting(now: now)
        case .handshaking:
            if now &- handshakeStarted > options.connectTimeout {
                finishClose(.timeout("TLS handshake with \(options.host):\(options.port)"))
            }
        case .open, .draining:
            expireDeadlines(now: now)
            guard state == .open || state == .draining else { return }
            if pingOutstanding {
                if now &- pingSentAt > options.pingTimeout {
                    finishClose(.timeout("no answer to PING within \(options.pingTimeout / 1_000_000) ms: the connection went silent"))
                }
                return
            }
            let silentWhileBusy = activeStreams > 0 && now &- max(silentSince, lastReceived) > options.pingAfterSilence
            if silentWhileBusy || now &- lastReceived > options.pingAfterIdle, let session {
                nghttp2_submit_ping(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), nil)
                pingOutstanding = true
                pingSentAt = now
                pingsSent += 1
            }
        case .idle, .closed:
            break
        }
    }

    /// Per-address connect timeouts, the next address after its head start, and the lookup's own timeout.
    private func tickConnecting(now: UInt64) {
        guard addressesResolved else {
            if now &- connectStarted > options.connectTimeout {
                finishClose(.timeout("resolving \(options.host) (no answer within \(options.connectTimeout / 1_000_000) ms)"))
            }
            return
        }
        for attempt in attempts where now &- attempt.started > options.connectTimeout {
            attempt.cancel(on: loop)
            lastConnectError = .timeout("connecting to \(attempt.address)")
        }
        attempts.removeAll { $0.fileDescriptor < 0 }
        if !pendingAddresses.isEmpty && (attempts.isEmpty || now >= nextAttemptAt) {
            startNextAttempt(now: now)
        } else if attempts.isEmpty && pendingAddresses.isEmpty {
            finishClose(lastConnectError ?? .timeout("connecting to \(options.host):\(options.port)"))
        }
    }

    // MARK: TLS and HTTP/2 set-up

    private func continueHandshake() {
        guard let tls else { return }
        switch tls.handshake() {
        case .wantRead: tlsWantsWrite = false
        case .wantWrite: tlsWantsWrite = true
        case let .failed(error): finishClose(.tls(error.message))
        case .done:
            guard tls.negotiatedProtocol == "h2" else {
                finishClose(.alpn("it chose \(tls.negotiatedProtocol ?? "no protocol")"))
                return
            }
            guard startSession() else { return }
            state = .open
            lastReceived = MonotonicClock.nanoseconds()
            silentSince = lastReceived
            delegate?.connectionDidOpen(self)
            flush()
        }
    }

    private func startSession() -> Bool {
        var newSession: OpaquePointer?
        let rc = nghttp2_session_client_new3(&newSession, ClientConnection.callbacks, Unmanaged.passUnretained(self).toOpaque(),
                                             nil, allocator.mem)
        guard rc == 0, let newSession else { finishClose(.protocolError("nghttp2_session_client_new: \(rc)")); return false }
        session = newSession
        var settings = [
            nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS.rawValue), value: 100),
            nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE.rawValue), value: 1 << 20),
        ]
        nghttp2_submit_settings(newSession, UInt8(NGHTTP2_FLAG_NONE.rawValue), &settings, settings.count)
        nghttp2_session_set_local_window_size(newSession, UInt8(NGHTTP2_FLAG_NONE.rawValue), 0, 16 << 20)
        return true
    }

    // MARK: I/O

    /// Feeds what the socket has to nghttp2; returns whether any bytes arrived.
    private func readAvailable() -> Bool {
        guard let tls, let session else { return false }
        var received = false
        while true {
            switch tls.read(into: input, capacity: inputCapacity) {
            case let .bytes(count):
                received = true
                let consumed = nghttp2_session_mem_recv(session, input, count)
                if consumed < 0 {
                    finishClose(.protocolError(String(cString: nghttp2_strerror(Int32(consumed)))))
                    return received
                }
                if state == .closed { return received }
            case .wouldBlock:
                return received
            case .closed:
                finishClose(goAway == nil ? .closed("the server closed the connection") : nil)
                return received
            case let .failed(error):
                finishClose(.tls(error.message))
                return received
            }
        }
    }

    /// Moves nghttp2's pending frames into the output buffer (≈16 KB at a time) and writes it.
    private func flush() {
        guard let session else { return }
        while true {
            if blockedWriteLength == 0 {
                while output.pending < 16 * 1024 {
                    var data: UnsafePointer<UInt8>?
                    let produced = nghttp2_session_mem_send(session, &data)
                    if produced < 0 {
                        finishClose(.protocolError(String(cString: nghttp2_strerror(Int32(produced)))))
                        return
                    }
                    if produced == 0 { break }
                    output.append(data!, count: produced)
                }
            }
            if output.isEmpty { return }
            guard let tls else { return }
            let length = blockedWriteLength > 0 ? blockedWriteLength : min(output.pending, 16 * 1024)
            switch tls.write(output.base + output.start, count: length) {
            case let .bytes(written):
                blockedWriteLength = 0
                output.consume(written)
            case .wouldBlock:
                blockedWriteLength = length
                return
            case .closed:
                finishClose(.closed("the server closed the connection while we were writing"))
                return
            case let .failed(error):
                finishClose(.tls(error.message))
                return
            }
        }
    }

    private func expireDeadlines(now: UInt64) {
        guard activeStreams > 0, let session else { return }
        for index in slots.indices where slots[index].active && slots[index].deadline <= now {
            let sent = slots[index].sent
            let tag = slots[index].tag
            if slots[index].streamID > 0 {
                nghttp2_submit_rst_stream(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), slots[index].streamID, UInt32(NGHTTP2_CANCEL.rawValue))
            }
            release(index)
            delegate?.connection(self, didFail: .timedOut(sent: sent), tag: tag)
        }
    }

    private func release(_ index: Int) {
        slots[index].end()
        slots[index].generation &+= 1  // late callbacks for the old stream no longer match
        freeSlots.append(Int32(index))
        activeStreams -= 1
    }

    /// Fails every open stream and tears the connection down; the delegate hears about each stream
    /// first, then about the connection.
    private func finishClose(_ error: TransportError?) {
        if state == .closed { return }
        let previous = state
        state = .closed
        connectRound &+= 1  // a lookup still under way for this round is ignored when it answers
        cancelAttempts()
        pingOutstanding = false
        for index in slots.indices where slots[index].active {
            let tag = slots[index].tag
            let failure = classifyUnanswered(index: index, errorCode: nil,
                                             why: error?.description ?? "connection closed")
            release(index)
            delegate?.connection(self, didFail: failure, tag: tag)
        }
        if let session { nghttp2_session_del(session); self.session = nil }
        if previous != .idle { loop.remove(self) }
        if let tls {
            tls.closeNotify()
            self.tls = nil  // closes the socket
            rawFD = -1
        } else if rawFD >= 0 {
            Glibc.close(rawFD)
            rawFD = -1
        }
        output.start = 0; output.end = 0
        blockedWriteLength = 0
        delegate?.connection(self, didClose: error, goAway: goAway)
    }

    /// Refused when provably unprocessed (never sent, REFUSED_STREAM, above GOAWAY's last stream);
    /// unknown otherwise.
    private func classifyUnanswered(index: Int, errorCode: UInt32?, why: String) -> StreamFailure {
        let slot = slots[index]
        if !slot.sent { return .refused("not sent before \(why)") }
        if errorCode == UInt32(NGHTTP2_REFUSED_STREAM.rawValue) { return .refused("RST_STREAM REFUSED_STREAM") }
        if let goAway, slot.streamID > goAway.lastStreamID { return .refused("above GOAWAY last-stream-id \(goAway.lastStreamID)") }
        if let errorCode { return .unknown("stream reset with HTTP/2 error \(errorCode)") }
        return .unknown(why)
    }

    // MARK: nghttp2 callbacks (on the loop thread, inside mem_recv/mem_send)

    private func slotIndex(for userData: UnsafeMutableRawPointer?) -> Int? {
        guard let (index, generation) = StreamSlot.decode(userData), index < slots.count,
              slots[index].active, slots[index].generation == generation else { return nil }
        return index
    }

    private func slotIndex(stream streamID: Int32) -> Int? {
        guard let session else { return nil }
        return slotIndex(for: nghttp2_session_get_stream_user_data(session, streamID))
    }

    fileprivate func readBody(into buffer: UnsafeMutablePointer<UInt8>, length: Int,
                              flags: UnsafeMutablePointer<UInt32>, source: UnsafeMutableRawPointer?) -> Int {
        guard let index = slotIndex(for: source), let body = slots[index].body else {
            flags.pointee |= UInt32(NGHTTP2_DATA_FLAG_EOF.rawValue)
            return 0
        }
        let offset = slots[index].bodyOffset
        let count = min(length, body.count - offset)
        buffer.update(from: body.base + offset, count: count)
        slots[index].bodyOffset += count
        if slots[index].bodyOffset == body.count { flags.pointee |= UInt32(NGHTTP2_DATA_FLAG_EOF.rawValue) }
        return count
    }

    fileprivate func onHeader(streamID: Int32, name: UnsafeBufferPointer<UInt8>, value: UnsafeBufferPointer<UInt8>) {
        guard let index = slotIndex(stream: streamID) else { return }
        if name.count == 7, name.elementsEqual(":status".utf8) {
            var status = 0
            for digit in value { status = status * 10 + Int(digit &- 48) }
            slots[index].status = status
        } else if name.count > 5, name[0] == UInt8(ascii: "a") && name.starts(with: "apns-".utf8)
                    || name[0] == UInt8(ascii: "r") && name.elementsEqual("retry-after".utf8) {
            // Only APNs' own headers (ids, channel id) and Retry-After matter to a sender; skip date, server, etc.
            slots[index].responseHeaders.append(contentsOf: name)
            slots[index].responseHeaders.append(0)
            slots[index].responseHeaders.append(contentsOf: value)
            slots[index].responseHeaders.append(0)
        }
    }

    fileprivate func onData(streamID: Int32, data: UnsafeBufferPointer<UInt8>) {
        guard let index = slotIndex(stream: streamID) else { return }
        if slots[index].responseBody.count + data.count <= 64 * 1024 {
            slots[index].responseBody.append(contentsOf: data)
        }
    }

    fileprivate func onFrameSent(type: UInt8, streamID: Int32) {
        guard type == UInt8(NGHTTP2_HEADERS.rawValue), let index = slotIndex(stream: streamID) else { return }
        slots[index].sent = true
        slots[index].streamID = streamID
    }

    fileprivate func onFrameNotSent(streamID: Int32, userData: UnsafeMutableRawPointer?) {
        guard let index = slotIndex(for: userData) ?? slotIndex(stream: streamID) else { return }
        let tag = slots[index].tag
        release(index)
        delegate?.connection(self, didFail: .refused("not sent: the connection is going away"), tag: tag)
    }

    fileprivate func onPingAcknowledged() {
        pingOutstanding = false
        pingsAcknowledged += 1
    }

    fileprivate func onGoAway(lastStreamID: Int32, errorCode: UInt32, debugData: UnsafeBufferPointer<UInt8>) {
        goAway = GoAwayInfo(lastStreamID: lastStreamID, errorCode: errorCode, debugData: String(decoding: debugData, as: UTF8.self))
        if state == .open { state = .draining }
    }

    fileprivate func onStreamClose(streamID: Int32, errorCode: UInt32) {
        guard let index = slotIndex(stream: streamID) else { return }
        let tag = slots[index].tag
        let status = slots[index].status
        if status > 0 {
            responsesReceived += 1
            if (200..<300).contains(status) { hadSuccess = true }
            // Move the buffers out of the slot for the call: a delegate that submits from here mutates
            // `slots`, which must not be under an access then (exclusivity). Moving keeps their capacity.
            var headerBytes: [UInt8] = []
            var body: [UInt8] = []
            swap(&headerBytes, &slots[index].responseHeaders)
            swap(&body, &slots[index].responseBody)
            headerBytes.withUnsafeBufferPointer { headerBuffer in
                body.withUnsafeBufferPointer { bodyBuffer in
                    delegate?.connection(self, didReceive: ResponseView(status: status, headerBytes: headerBuffer, body: bodyBuffer), tag: tag)
                }
            }
            swap(&headerBytes, &slots[index].responseHeaders)
            swap(&body, &slots[index].responseBody)
            release(index)
        } else {
            let failure = classifyUnanswered(index: index, errorCode: errorCode, why: "stream closed")
            release(index)
            delegate?.connection(self, didFail: failure, tag: tag)
        }
    }

    // nonisolated(unsafe): built once, then only read by nghttp2_session_*_new (which copies it).
    nonisolated(unsafe) private static let callbacks: OpaquePointer = {
        var callbacks: OpaquePointer?
        nghttp2_session_callbacks_new(&callbacks)
        nghttp2_session_callbacks_set_on_header_callback(callbacks) { _, frame, name, nameLength, value, valueLength, _, userData in
            guard let frame, frame.pointee.hd.type == UInt8(NGHTTP2_HEADERS.rawValue) else { return 0 }
            let connection = Unmanaged<ClientConnection>.fromOpaque(userData!).takeUnretainedValue()
            connection.onHeader(streamID: frame.pointee.hd.stream_id, name: UnsafeBufferPointer(start: name, count: nameLength),
                                value: UnsafeBufferPointer(start: value, count: valueLength))
            return 0
        }
        nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks) { _, _, streamID, data, length, userData in
            let connection = Unmanaged<ClientConnection>.fromOpaque(userData!).takeUnretainedValue()
            connection.onData(streamID: streamID, data: UnsafeBufferPointer(start: data, count: length))
            return 0
        }
        nghttp2_session_callbacks_set_on_frame_send_callback(callbacks) { _, frame, userData in
            let connection = Unmanaged<ClientConnection>.fromOpaque(userData!).takeUnretainedValue()
            connection.onFrameSent(type: frame!.pointee.hd.type, streamID: frame!.pointee.hd.stream_id)
            return 0
        }
        nghttp2_session_callbacks_set_on_frame_not_send_callback(callbacks) { session, frame, _, userData in
            guard let frame, frame.pointee.hd.type == UInt8(NGHTTP2_HEADERS.rawValue) else { return 0 }
            let connection = Unmanaged<ClientConnection>.fromOpaque(userData!).takeUnretainedValue()
            let streamID = frame.pointee.hd.stream_id
            connection.onFrameNotSent(streamID: streamID, userData: nghttp2_session_get_stream_user_data(session, streamID))
            return 0
        }
        nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks) { _, frame, userData in
            guard let frame else { return 0 }
            let connection = Unmanaged<ClientConnection>.fromOpaque(userData!).takeUnretainedValue()
            if frame.pointee.hd.type == UInt8(NGHTTP2_PING.rawValue), frame.pointee.hd.flags & UInt8(NGHTTP2_FLAG_ACK.rawValue) != 0 {
                connection.onPingAcknowledged()
                return 0
            }
            guard frame.pointee.hd.type == UInt8(NGHTTP2_GOAWAY.rawValue) else { return 0 }
            let goaway = frame.pointee.goaway
            connection.onGoAway(lastStreamID: goaway.last_stream_id, errorCode: goaway.error_code,
                                debugData: UnsafeBufferPointer(start: goaway.opaque_data, count: goaway.opaque_data_len))
            return 0
        }
        nghttp2_session_callbacks_set_on_stream_close_callback(callbacks) { _, streamID, errorCode, userData in
            let connection = Unmanaged<ClientConnection>.fromOpaque(userData!).takeUnretainedValue()
            connection.onStreamClose(streamID: streamID, errorCode: errorCode)
            return 0
        }
        return callbacks!
    }()
}

/// The state of one request stream, kept in a reused slot.
struct StreamSlot {
    var active = false
    var generation: UInt32 = 0
    var streamID: Int32 = 0
    var tag: UInt64 = 0
    var deadline: UInt64 = 0
    var sent = false
    var status = 0
    var body: SharedBytes?
    var bodyOffset = 0
    var responseHeaders: [UInt8] = []
    var responseBody: [UInt8] = []

    mutating func begin(tag: UInt64, deadline: UInt64, body: SharedBytes?, streamID: Int32) {
        active = true
        self.tag = tag
        self.deadline = deadline
        self.body = body
        self.streamID = streamID
        bodyOffset = 0
        sent = false
        status = 0
        responseHeaders.removeAll(keepingCapacity: true)
        responseBody.removeAll(keepingCapacity: true)
    }

    mutating func end() {
        active = false
        body = nil
    }

    /// nghttp2's per-stream user data: slot index + 1 in the low 24 bits, the slot's generation above.
    static func userData(index: Int, generation: UInt32) -> UnsafeMutableRawPointer {
        UnsafeMutableRawPointer(bitPattern: UInt(index + 1) | UInt(generation) << 24)!
    }

    static func decode(_ pointer: UnsafeMutableRawPointer?) -> (Int, UInt32)? {
        guard let pointer else { return nil }
        let bits = UInt(bitPattern: pointer)
        let index = Int(bits & 0xFF_FFFF) - 1
        guard index >= 0 else { return nil }
        return (index, UInt32(truncatingIfNeeded: bits >> 24))
    }
}

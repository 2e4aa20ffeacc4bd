#if canImport(Glibc)
import Glibc
#endif
import CNghttp2
import Crypto
import IO

/// What a client connection tells its owner. All calls arrive on the connection's loop thread.
public protocol ClientConnectionDelegate: AnyObject {
    /// TLS and the HTTP/2 preface are done; requests may be submitted.
    func connectionDidOpen(_ connection: ClientConnection)
    /// Called every loop turn while the connection can take `capacity` more streams: submit now.
    func connection(_ connection: ClientConnection, canSubmit capacity: Int)
    /// A response arrived for the request submitted as `stream` (the handle `submit` returned).
    func connection(_ connection: ClientConnection, didReceive response: ResponseView, stream: Int)
    /// The request submitted as `stream` ended without a response.
    func connection(_ connection: ClientConnection, didFail failure: StreamFailure, stream: Int)
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
    /// Each address's TCP connect, the name lookup and the TLS handshake each get this long.
    public var connectTimeout: Duration = .seconds(10)
    /// RFC 8305 (Happy Eyeballs): the next address is tried after this head start, while the
    /// earlier attempt may still finish, so an address that drops packets costs 250 ms, not a timeout.
    public var nextAddressDelay: Duration = .milliseconds(250)
    /// How host names become addresses (run off the loop thread).
    public var resolver: NameResolver = { host, port throws(TransportError) in try SocketAddress.resolve(host: host, port: port) }
    /// Liveness: a PING after this long without a byte received while nothing is in flight (APNs: about an hour).
    public var pingAfterIdle: Duration = .seconds(3600)
    /// Liveness: a PING after this long without a byte received while streams are in flight, so a
    /// peer that went silent (TCP open, process wedged) is found in seconds, not when its requests'
    /// deadlines pass one by one. nil: only the idle PING.
    public var pingAfterSilence: Duration? = .seconds(2)
    /// A PING not answered within this long means the peer is gone: the connection is closed and its
    /// in-flight streams fail (unknown).
    public var pingTimeout: Duration = .seconds(2)
    /// Response headers kept for the delegate, by name prefix (nil: all). A sender that needs only
    /// a few (APNs' ids, Retry-After) skips copying `date`, `server` and the like.
    public var keptResponseHeaders: [String]?

    public init(host: String, port: Int, serverName: String? = nil, tls: TLSConfiguration) {
        self.host = host
        self.port = port
        self.serverName = serverName
        self.tls = tls
    }
}

/// One HTTP/2 client connection over TLS, confined to one `EventLoop` thread: the connect (name
/// lookup off the loop, Happy Eyeballs), the TLS handshake, then an `HTTP2Session` pumped through
/// the TLS stream. Requests get a stream handle and come back through the delegate; nothing is
/// allocated per request (stream state lives in the reused slots of a `StreamTable`, payloads and
/// header lists are shared references).
///
/// The connection's life is one enum carrying what each stage owns (`Stage`), so a socket, a TLS
/// stream or a session can only be used in the stage that has one.
public final class ClientConnection: EventLoopSource, @unchecked Sendable {
    // @unchecked: every member is used only on `loop`'s thread (asserted in debug builds).
    public enum State: Equatable, Sendable { case idle, connecting, handshaking, open, draining, closed }

    /// An established connection: TLS and the HTTP/2 session over it.
    final class Link {
        let tls: TLSStream
        let session: HTTP2Session
        init(tls: TLSStream, session: HTTP2Session) { self.tls = tls; self.session = session }
    }

    enum Stage {
        case idle
        /// Looking the name up (off the loop); `round` tells a late answer of an earlier attempt apart.
        case resolving(round: Int)
        /// TCP connects racing over the addresses.
        case connecting(HappyEyeballs)
        case handshaking(TLSStream)
        case open(Link)
        /// No new streams: the server sent GOAWAY, ids ran out, or `close()` was called.
        case draining(Link)
        case closed
    }

    public let loop: EventLoop
    public let options: ClientConnectionOptions
    public weak var delegate: ClientConnectionDelegate?
    /// Free for the owner: e.g. the index of its own record of this connection.
    public var ownerIndex = 0

    var stage: Stage = .idle
    var streams: StreamTable
    var pump = TLSPump()
    var round = 0
    var closeRequested = false
    var terminated = false
    var closeError: TransportError?
    var goAway: GoAwayInfo?
    var connectStarted = MonotonicInstant(nanoseconds: 0)
    var handshakeWantsWrite = false
    /// Connect, lookup and handshake timeouts, and the next address's head start.
    lazy var connectTimer = LoopTimer { [unowned self] now in self.connectTimerFired(now: now) }
    /// The earliest deadline of a stream in flight.
    lazy var deadlineTimer = LoopTimer { [unowned self] now in self.expireDeadlines(now: now) }
    /// The next liveness check (silence, idle) or the PING's own timeout.
    lazy var livenessTimer = LoopTimer { [unowned self] now in self.checkLiveness(now: now) }
    var lastReceived = MonotonicInstant(nanoseconds: 0)
    /// When the current silence began: the last byte received, or the first stream submitted after
    /// the connection had none in flight (a long idle gap is not silence of a busy peer).
    var silentSince = MonotonicInstant(nanoseconds: 0)
    var pingSentAt: MonotonicInstant?
    /// PINGs sent for liveness, and the ACKs that came back.
    public internal(set) var pingsSent = 0
    public internal(set) var pingsAcknowledged = 0
    /// Requests answered (any status), answered with 2xx, and submitted since the last `connect()`.
    public internal(set) var responsesReceived = 0
    public internal(set) var successfulResponses = 0
    public internal(set) var streamsSubmitted = 0

    let authority: [UInt8]
    var authorization: [UInt8] = []
    let keptHeaderPrefixes: [[UInt8]]?
    let headerScratch: UnsafeMutablePointer<nghttp2_nv>
    static let headerScratchCapacity = 64
    static let methodName = Array(":method".utf8), schemeName = Array(":scheme".utf8)
    static let authorityName = Array(":authority".utf8), pathName = Array(":path".utf8)
    static let https = Array("https".utf8), authorizationName = Array("authorization".utf8)

    public init(loop: EventLoop, options: ClientConnectionOptions) {
        self.loop = loop
        self.options = options
        streams = StreamTable(capacity: options.maximumStreams)
        headerScratch = .allocate(capacity: Self.headerScratchCapacity)
        authority = Array((options.port == 443 ? options.host : "\(options.host):\(options.port)").utf8)
        keptHeaderPrefixes = options.keptResponseHeaders?.map { Array($0.utf8) }
    }

    deinit { headerScratch.deallocate() }

    public var state: State {
        switch stage {
        case .idle: return .idle
        case .resolving, .connecting: return .connecting
        case .handshaking: return .handshaking
        case .open: return .open
        case .draining: return .draining
        case .closed: return .closed
        }
    }

    public var fileDescriptor: Int32 {
        switch stage {
        case let .handshaking(tls): return tls.fileDescriptor
        case let .open(link), let .draining(link): return link.tls.fileDescriptor
        case .idle, .resolving, .connecting, .closed: return -1
        }
    }

    /// Streams in flight.
    public var activeStreams: Int { streams.active }
    /// The server's GOAWAY on this connection since the last `connect()`, if one came.
    public var receivedGoAway: GoAwayInfo? { goAway }
    /// Whether a liveness PING is waiting for its ACK.
    public var isPingOutstanding: Bool { pingSentAt != nil }

    /// The bearer token value sent as `authorization` from now on (`bearer <jwt>`); the owner swaps
    /// it per provider-token generation. Empty means no authorization header.
    public func setAuthorization(_ value: String) { authorization = Array(value.utf8) }

    /// How many more requests the connection takes now: the server's SETTINGS_MAX_CONCURRENT_STREAMS
    /// and our own cap, minus what is in flight; 0 unless open.
    public var capacity: Int {
        guard case let .open(link) = stage else { return 0 }
        return max(0, min(link.session.remoteMaximumConcurrentStreams, streams.capacity) - streams.active)
    }

    /// The streams the connection may have open at once while it is open: the server's latest
    /// SETTINGS_MAX_CONCURRENT_STREAMS, at most our own cap; nil unless open.
    public var grantedStreams: Int? {
        guard case let .open(link) = stage else { return nil }
        return min(link.session.remoteMaximumConcurrentStreams, streams.capacity)
    }

    /// Closes at once without waiting for the streams in flight: each fails first (unknown, unless
    /// provably unprocessed), then the delegate hears of the close, all before this returns. Not
    /// from inside this connection's own callbacks (nghttp2 may be running): from another source's
    /// `prepare`, for example.
    public func abort() {
        loop.assertInLoop("ClientConnection.abort")
        finishClose(nil)
    }

    /// Stops taking requests, lets open streams finish, then sends GOAWAY and closes. Safe to call
    /// from a delegate callback: the teardown happens on the next loop turn, outside nghttp2.
    public func close() {
        loop.assertInLoop("ClientConnection.close")
        switch stage {
        case let .open(link): stage = .draining(link)
        case .resolving, .connecting, .handshaking: closeRequested = true; loop.wake()
        case .draining, .idle, .closed: break
        }
    }

    // MARK: EventLoopSource

    public func prepare(now: MonotonicInstant) -> Bool {
        switch stage {
        case .resolving where closeRequested, .connecting where closeRequested, .handshaking where closeRequested:
            finishClose(nil)
            return false
        case let .open(link):
            let capacity = self.capacity
            if capacity > 0 { delegate?.connection(self, canSubmit: capacity) }
            return flushAndMaybeFinish(link)
        case let .draining(link):
            return flushAndMaybeFinish(link)
        case .handshaking:
            return handshakeWantsWrite
        case .idle, .resolving, .connecting, .closed:
            // While connecting, the attempts are the loop's sources; the connection has no socket yet.
            return false
        }
    }

    public func handle(events: UInt32, now: MonotonicInstant) {
        if case .handshaking = stage {
            continueHandshake(now: now)
            // Records that arrived with the handshake's last flight are already inside mbedTLS: read on.
        }
        switch stage {
        case let .open(link), let .draining(link):
            switch pump.read(from: link.tls, into: link.session, stillOpen: { [unowned self] in self.isLinked }) {
            case let .ok(received):
                // Only bytes count as a sign of life: a writable socket says nothing about the peer.
                if received { lastReceived = now; silentSince = now }
            case .closed:
                finishClose(goAway == nil ? .closed("the server closed the connection") : nil)
                return
            case let .failed(error):
                finishClose(error)
                return
            }
            if case let .open(link) = stage { flush(link) } else if case let .draining(link) = stage { flush(link) }
        case .idle, .resolving, .connecting, .handshaking, .closed:
            break
        }
    }

    var isLinked: Bool {
        switch stage {
        case .open, .draining: return true
        default: return false
        }
    }

    /// Flushes; a draining connection with nothing left in flight sends its GOAWAY and, once that
    /// is written, closes. Returns whether the socket is wanted for writing.
    private func flushAndMaybeFinish(_ link: Link) -> Bool {
        if case .draining = stage, streams.active == 0, !terminated {
            terminated = true
            do throws(TransportError) { try link.session.terminate(errorCode: UInt32(NGHTTP2_NO_ERROR.rawValue)) } catch {
                finishClose(error)
                return false
            }
        }
        flush(link)
        guard isLinked else { return false }
        if case .draining = stage, streams.active == 0, !link.session.hasPendingOutput, !pump.isBlocked {
            finishClose(closeError)
            return false
        }
        return link.session.hasPendingOutput || pump.isBlocked
    }

    func flush(_ link: Link) {
        switch pump.flush(link.session, to: link.tls) {
        case .ok: break
        case .closed: finishClose(.closed("the server closed the connection while we were writing"))
        case let .failed(error): finishClose(error)
        }
    }
}

#if canImport(Glibc)
import Glibc
#endif
import Crypto
import IO

/// The TCP connects of one connection attempt, raced over the resolved addresses (RFC 8305): the
/// next address starts after a head start or as soon as the previous one fails; each has its own
/// timeout; the first to connect wins.
final class HappyEyeballs {
    var pending: [SocketAddress]
    var attempts: [ConnectAttempt] = []
    var nextAttemptAt: MonotonicInstant
    var lastError: TransportError?

    init(addresses: [SocketAddress], now: MonotonicInstant) {
        pending = NameResolution.interleaved(addresses)
        nextAttemptAt = now
    }

    func cancelAll(on loop: EventLoop) {
        for attempt in attempts { attempt.cancel(on: loop) }
        attempts.removeAll()
        pending.removeAll()
    }
}

extension ClientConnection {
    /// Starts connecting (from `.idle` or `.closed`). Call on the loop thread.
    public func connect() {
        loop.assertInLoop("ClientConnection.connect")
        switch stage {
        case .idle, .closed: break
        default: preconditionFailure("connect() on a connection that is \(state)")
        }
        closeError = nil
        goAway = nil
        closeRequested = false
        terminated = false
        responsesReceived = 0
        successfulResponses = 0
        streamsSubmitted = 0
        pingSentAt = nil
        pump.reset()
        round &+= 1
        let round = self.round
        // A stage with an owner first: a failure from here on goes through finishClose, which tells
        // the delegate (from .closed it would return early, and a reconnecting pool would never hear of it).
        stage = .resolving(round: round)
        loop.add(self)
        connectStarted = MonotonicInstant.now()
        guard (1...65535).contains(options.port) else {
            // getaddrinfo would wrap it (70000 becomes 4464) and connect somewhere else.
            finishClose(.resolve(host: options.host, message: "port \(options.port) is outside 1…65535"))
            return
        }
        loop.arm(connectTimer, at: connectStarted + options.connectTimeout)
        NameResolution.start(host: options.host, port: options.port, resolver: options.resolver, on: loop) { [self] result in
            self.resolved(result, round: round)
        }
    }

    private func resolved(_ result: Result<[SocketAddress], TransportError>, round: Int) {
        guard case let .resolving(current) = stage, current == round else { return }  // a late answer of an earlier round
        switch result {
        case let .failure(error):
            finishClose(error)
        case let .success(addresses):
            let now = MonotonicInstant.now()
            let race = HappyEyeballs(addresses: addresses, now: now)
            stage = .connecting(race)
            startNextAttempt(race, now: now)
        }
    }

    /// Starts a connect to the next address; when none is left and none is under way, the
    /// connection fails with the last address's error.
    private func startNextAttempt(_ race: HappyEyeballs, now: MonotonicInstant) {
        while !race.pending.isEmpty {
            let address = race.pending.removeFirst()
            do throws(TransportError) {
                let attempt = try ConnectAttempt(address: address, now: now) { [unowned self] attempt, error in
                    self.attemptFinished(attempt, error: error)
                }
                race.attempts.append(attempt)
                loop.add(attempt)
                race.nextAttemptAt = now + options.nextAddressDelay
                armConnectTimer(race)
                return
            } catch {
                race.lastError = error
            }
        }
        if race.attempts.isEmpty {
            finishClose(race.lastError ?? .connect("\(options.host):\(options.port)", ECONNREFUSED))
        }
    }

    /// The timer wakes for the earliest of: an attempt's timeout, the next address's head start.
    private func armConnectTimer(_ race: HappyEyeballs) {
        var next = race.pending.isEmpty ? MonotonicInstant.distantFuture : race.nextAttemptAt
        for attempt in race.attempts { next = min(next, attempt.started + options.connectTimeout) }
        if next < .distantFuture { loop.arm(connectTimer, at: next) }
    }

    /// The first attempt to connect wins; the others are closed. A failed one makes room for the next address at once.
    private func attemptFinished(_ attempt: ConnectAttempt, error: Int32) {
        guard case let .connecting(race) = stage, let index = race.attempts.firstIndex(where: { $0 === attempt }) else { return }
        race.attempts.remove(at: index)
        let now = MonotonicInstant.now()
        if error != 0 {
            attempt.cancel(on: loop)
            race.lastError = .connect(attempt.address.description, error)
            if race.attempts.isEmpty { startNextAttempt(race, now: now) }
            return
        }
        guard let socket = attempt.takeDescriptor(from: loop) else { return }
        race.cancelAll(on: loop)
        let tls: TLSStream
        do throws(TLSError) {
            // Until TLSStream's init returns, `socket` still owns the descriptor (and closes it on a throw).
            tls = try TLSStream(fd: socket.rawValue, configuration: options.tls, serverName: options.serverName ?? options.host)
        } catch {
            finishClose(.tls(error.message))
            return
        }
        _ = socket.release()  // the TLS stream's net context owns and closes it now
        stage = .handshaking(tls)
        loop.arm(connectTimer, at: now + options.connectTimeout)
        continueHandshake(now: now)
    }

    /// Per-address connect timeouts, the next address after its head start, the lookup's and the
    /// handshake's own timeouts.
    func connectTimerFired(now: MonotonicInstant) {
        switch stage {
        case .resolving:
            finishClose(.timeout("resolving \(options.host) (no answer within \(options.connectTimeout.milliseconds) ms)"))
        case let .connecting(race):
            for attempt in race.attempts where attempt.started + options.connectTimeout <= now {
                attempt.cancel(on: loop)
                race.lastError = .timeout("connecting to \(attempt.address)")
            }
            race.attempts.removeAll { !$0.isOpen }
            if !race.pending.isEmpty && (race.attempts.isEmpty || now >= race.nextAttemptAt) {
                startNextAttempt(race, now: now)
            } else if race.attempts.isEmpty && race.pending.isEmpty {
                finishClose(race.lastError ?? .timeout("connecting to \(options.host):\(options.port)"))
            } else {
                armConnectTimer(race)
            }
        case .handshaking:
            finishClose(.timeout("TLS handshake with \(options.host):\(options.port)"))
        case .idle, .open, .draining, .closed:
            break
        }
    }

    func continueHandshake(now: MonotonicInstant) {
        guard case let .handshaking(tls) = stage else { return }
        switch tls.handshake() {
        case .wantRead: handshakeWantsWrite = false
        case .wantWrite: handshakeWantsWrite = true
        case let .failed(error): finishClose(.tls(error.message))
        case .done:
            guard tls.negotiatedProtocol == "h2" else {
                finishClose(.alpn("it chose \(tls.negotiatedProtocol ?? "no protocol")"))
                return
            }
            let session: HTTP2Session
            do throws(TransportError) {
                session = try HTTP2Session(role: .client, delegate: self, maximumConcurrentStreams: 100)
            } catch {
                finishClose(error)
                return
            }
            loop.disarm(connectTimer)
            let link = Link(tls: tls, session: session)
            stage = .open(link)
            lastReceived = now
            silentSince = now
            armLiveness(now: now)
            delegate?.connectionDidOpen(self)
            if isLinked { flush(link) }
        }
    }
}

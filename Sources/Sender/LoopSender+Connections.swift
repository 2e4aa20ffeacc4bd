import APNs
import Crypto
import HTTP2
import IO

/// Opening, reconnecting and retiring the connections of one loop, their provider tokens, and what
/// a refusal says about credentials or this machine's clock.
extension LoopSender {
    /// Closes every connection (pool shutdown).
    func closeAll() { for slot in slots { slot.connection.close() } }


    func openConnectionsIfNeeded(now: MonotonicInstant) {
        for slot in slots {
            let state = slot.connection.state
            guard state == .idle || state == .closed, now >= slot.reconnectAt, !pool.halted.load(ordering: .relaxed) else { continue }
            // A new connection starts on the current generation when it first sends (presentProviderToken).
            slot.lease = nil
            slot.retire = false
            slot.hadSuccess = false
            liveConnections.add(1, ordering: .sequentiallyConsistent)
            slot.connection.connect()
        }
    }

    /// Picks the provider token for the requests about to go out on `slot`'s connection, and sets its
    /// header only when the generation changed. Called when sending, not on a timer: the lease is
    /// stamped at the token's first use, so the 20 minutes APNs wants between changes count from what
    /// it saw. False when no token can be signed (the pool is halted then).
    func presentProviderToken(on slot: PooledConnection) -> Bool {
        guard let source = configuration.providerTokens else { return true }
        let presented = slot.lease?.generation
        do {
            let token = try source.token(for: &slot.lease)
            if token.generation != presented { slot.connection.setAuthorization(token.authorization) }
            return true
        } catch {
            pool.halt(.authOrConnectionFailure, message: "cannot sign a provider token: \(error)")
            return false
        }
    }

    func connectionDidOpen(_ connection: ClientConnection) {
        counters.connectionsOpened += 1
        pool.connectionOpened()
        slots[connection.ownerIndex].failuresInARow = 0
    }

    func connection(_ connection: ClientConnection, didClose error: TransportError?, goAway: GoAwayInfo?) {
        let slot = slots[connection.ownerIndex]
        let now = MonotonicInstant.now()
        defer {
            liveConnections.subtract(1, ordering: .sequentiallyConsistent)
            pool.connectionClosed()
            // A draining connection finishes inside the loop's socket pass, after this sender's
            // prepare armed the wake timer: without re-arming it for the reconnect, the loop slept
            // until the next deadline with pushes queued (a fault run found a GOAWAY stalling the
            // pool that way until every queued push expired).
            armWakeTimer()
        }
        if let goAway {
            counters.goAways += 1
            // APNs may say why in the GOAWAY's JSON. Only a reason known to mean "fix the credentials
            // or configuration" stops the pool; a reason that asks for a new connection
            // (ExpiredProviderToken, UnrelatedKeyIdInToken), one we do not know, or none at all is a
            // drain: reconnect with back-off, resend what was provably unprocessed.
            if let reason = ErrorBody.goAwayReason(debugData: goAway.debugData), reason.action == .fixCredentials {
                pool.halt(.authOrConnectionFailure, message: "APNs closed the connection: GOAWAY \(reason.name)")
            }
        }
        let answered = connection.responsesReceived > 0
        if (error == nil || slot.retire) && answered {
            // A clean GOAWAY or a retirement after real work: a fresh connection right away.
            slot.backoff = .zero
            slot.reconnectAt = now
            return
        }
        // A failure, or a connection that closed before answering anything: back off (1 s → 60 s)
        // so a server that refuses us at once is not hammered with new connections.
        if let error {
            counters.connectionFailures += 1
            pool.connectionFailed(error)
        }
        if let error, !answered && connection.streamsSubmitted == 0 {
            // Counted per connection: one failure of one connection (a DNS blip) is retried.
            slot.failuresInARow += 1
            if slot.failuresInARow >= configuration.failFastAfterAttempts && !slot.gaveUp {
                slot.gaveUp = true
                pool.connectionGaveUp(error)
            }
        }
        if answered && connection.successfulResponses > 0 {
            // It worked until it dropped (a reset, a restart behind a load balancer): reconnect at
            // once, once. Should the new connection fail before answering, the back-off starts
            // then. (A 1 s pause after every such drop let a fault run's churning connections
            // leave most pushes waiting until they expired.)
            slot.backoff = .zero
            slot.reconnectAt = now
            return
        } else {
            slot.backoff = slot.backoff == .zero ? configuration.reconnectInitial : min(configuration.reconnectMaximum, slot.backoff * 2)
        }
        slot.reconnectAt = now + slot.backoff
    }

    /// Notes the first provider-token generation APNs accepted (once per loop, not per push), so a
    /// later InvalidProviderToken can tell "the new token is refused" from "no token ever worked".
    func recordAcceptedToken(on slot: PooledConnection) {
        guard configuration.providerTokens != nil else { recordedAcceptedToken = true; return }
        guard let generation = slot.lease?.generation else { return }
        pool.tokenAccepted(generation: generation)
        recordedAcceptedToken = true
    }

    /// Whether an `ExpiredProviderToken` confirms that APNs refuses this connection's token: it
    /// came before any push was accepted on the connection, for the second time with this token.
    /// Otherwise the connection is retired and the push resent on a new one, like any other
    /// `ExpiredProviderToken` (a fault run found one sporadic answer halting the whole pool, when
    /// the first answer alone decided).
    func confirmedExpired(on slot: PooledConnection) -> Bool {
        guard let generation = slot.lease?.generation else { return true }
        return !slot.hadSuccess && pool.tokenExpiredOnFreshConnection(generation: generation)
    }

    /// Whether APNs' refusal of this connection's provider token points at this machine's clock
    /// (see `ProviderTokenClockDiagnosis`); the message to halt with, or nil.
    func clockDiagnosis(_ reason: Reason, on slot: PooledConnection) -> String? {
        guard let source = configuration.providerTokens, let generation = slot.lease?.generation else { return nil }
        let issuedAt = Int64(generation) * ProviderTokenSource.window.components.seconds
        return ProviderTokenClockDiagnosis.diagnose(reason: reason.name, issuedAt: issuedAt, now: source.currentSeconds,
                                                    earlierTokenAccepted: pool.acceptedTokenBefore(generation: generation))
    }
}

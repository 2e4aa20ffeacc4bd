import APNs
import Crypto
import HTTP2
import IO

/// Opening, reconnecting and retiring the connections of one loop, their provider tokens, and what
/// a refusal says about credentials or this machine's clock.
extension LoopSender {
    /// Closes every connection (pool shutdown); none reconnects or is replaced after this.
    func closeAll() {
        closing = true
        for slot in slots { slot.connection.close() }
    }

    func openConnectionsIfNeeded(now: MonotonicInstant) {
        guard !closing, !pool.halted.load(ordering: .relaxed) else { return }
        replaceDrainingConnections(now: now)
        releaseSpareConnections()
        for slot in slots where !slot.replaced {
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

    /// A connection that started draining (a GOAWAY, a retirement) with pushes in flight leaves
    /// its slot at once: it takes no new pushes and keeps its streams until each is answered or
    /// reaches its deadline (request timeout or the push's own), then closes; a replacement opens in
    /// the slot beside it. (It used to hold the slot until its last answer: one answer slower than
    /// the deadline kept the loop's queue waiting until every push in it expired — a fault run with
    /// goaway=709,slow=0.001:30000 lost about 42,000 of 50,000.) One with nothing in flight closes within
    /// the turn and reconnects in its slot as before. The replacement is a closed connection kept
    /// from an earlier drain, or a new one. Each drain ends by its streams' deadlines; at most
    /// `drainsPerSlot` per slot at once bound the memory a storm of GOAWAYs with slow answers holds
    /// (a connection with 1,000 streams costs a megabyte or two): beyond that the oldest drain is
    /// ended at once, its streams unknown — those the longest without an answer. (Keeping the slot
    /// instead would bring back the stall.)
    func replaceDrainingConnections(now: MonotonicInstant) {
        for index in slots.indices {
            let old = slots[index]
            guard !old.replaced, old.inFlight > 0, old.connection.state == .draining else { continue }
            // A GOAWAY that says to fix the credentials halts the pool when the connection closes
            // (see `didClose`): no replacement to send more pushes into the same refusal meanwhile.
            if let goAway = old.connection.receivedGoAway, let reason = ErrorBody.goAwayReason(debugData: goAway.debugData),
               reason.action == .fixCredentials { continue }
            if drainingConnections.load(ordering: .relaxed) >= Self.drainsPerSlot * slotCount, let oldest = oldestDrain() {
                oldest.connection.abort()  // its streams fail and its close comes back at once: one drain fewer, one spare more
            }
            let replacement = slots.first { $0.replaced && $0.inFlight == 0 && ($0.connection.state == .closed || $0.connection.state == .idle) }
                ?? addConnection()
            old.replaced = true
            old.drainingSince = now
            replacement.replaced = false
            // It counts as draining now, not as one of the slot's connections (`connectionsUp`).
            liveConnections.subtract(1, ordering: .sequentiallyConsistent)
            drainingConnections.add(1, ordering: .sequentiallyConsistent)
            // The slot's reconnect state goes with it. After real work, a fresh connection right
            // away (as a close after a GOAWAY decides). Told to go before answering anything (its
            // streams were kept, so they will be answered or time out): at once the first time,
            // then backing off (1 s → 60 s) while that repeats, so a server that sends every new
            // connection away is not hammered with more.
            replacement.failuresInARow = old.failuresInARow
            replacement.gaveUp = old.gaveUp
            if old.connection.responsesReceived > 0 {
                replacement.backoff = .zero
                replacement.reconnectAt = now
            } else {
                replacement.reconnectAt = now + old.backoff
                replacement.backoff = old.backoff == .zero ? configuration.reconnectInitial : min(configuration.reconnectMaximum, old.backoff * 2)
            }
        }
    }

    private func oldestDrain() -> PooledConnection? {
        var oldest: PooledConnection?
        for slot in slots where slot.replaced && slot.connection.state == .draining {
            if oldest.map({ slot.drainingSince < $0.drainingSince }) ?? true { oldest = slot }
        }
        return oldest
    }

    /// Spares left by a burst of drains (each one that held an answer slower than the deadline
    /// kept a connection open meanwhile) are let go from the end of `slots`, keeping as many as
    /// the loop has slots for the next GOAWAY: their stream tables and job arrays are not held for
    /// the life of the daemon. Only the end: every other connection keeps its index. Called from
    /// `prepare`, never inside a connection's own callback.
    func releaseSpareConnections() {
        while slots.count > 2 * slotCount, let last = slots.last, last.replaced, last.inFlight == 0,
              last.connection.state == .closed || last.connection.state == .idle {
            slots.removeLast()
        }
    }

    /// Picks the provider token for the requests about to go out on `slot`'s connection, and sets its
    /// header only when the generation changed. Called when sending, not on a timer: the lease is
    /// stamped at the token's first use, so the 20 minutes APNs wants between changes count from what
    /// it saw. False when no token can be signed (the pool is halted then).
    func presentProviderToken(on slot: PooledConnection) -> Bool {
        if let accessTokens { return presentAccessToken(accessTokens, on: slot) }
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
        noteGrant(slots[connection.ownerIndex])
    }

    /// Tells the pool's gate when the streams a connection's server grants changed (one compare
    /// per answer; the gate's lock only on a change): what the gate lets producers hand out is
    /// then what the wire can carry, plus a batch.
    func noteGrant(_ slot: PooledConnection) {
        guard let grants, !slot.replaced, let granted = slot.connection.grantedStreams, granted != slot.grant else { return }
        slot.grant = granted
        let configured = max(1, configuration.streamsPerConnection)
        let shortfall = slots.reduce(0) { sum, slot in slot.replaced ? sum : sum + configured - min(configured, slot.grant ?? configured) }
        grants.gate.granted(loop: grants.loop, shortfall: shortfall)
    }

    func connection(_ connection: ClientConnection, didClose error: TransportError?, goAway: GoAwayInfo?) {
        let slot = slots[connection.ownerIndex]
        let now = MonotonicInstant.now()
        defer {
            if slot.replaced {
                drainingConnections.subtract(1, ordering: .sequentiallyConsistent)
            } else {
                liveConnections.subtract(1, ordering: .sequentiallyConsistent)
            }
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
        if slot.replaced {
            // Drained beside its replacement, which has the slot and its reconnect state: this
            // one is only kept for the next replacement.
            if let error {
                counters.connectionFailures += 1
                pool.connectionFailed(error)
            }
            return
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

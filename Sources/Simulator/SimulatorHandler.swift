#if canImport(Glibc)
import Glibc
#endif
import APNs
import Crypto
import HTTP2
import JSONCore
import Synchronization
import Vocabulary

/// The APNs look-alike behind both simulator ports: authenticates, validates, routes, injects
/// faults and answers like APNs, and hands FCM's paths to `FCMSimulatorHandler` (the transport
/// faults — GOAWAY, drop, stall, latency, slow answers — apply to both). One per loop thread; what
/// the threads share (counters, channels, the log, FCM's tokens and quota) is in `SimulatorShared`.
final class SimulatorHandler: HTTP2RequestHandler, @unchecked Sendable {
    // @unchecked: mutable state is confined to this handler's loop thread; `shared` is thread-safe.
    let configuration: SimulatorConfiguration
    private let verifier: ProviderTokenVerifier
    private var connectionState: [ObjectIdentifier: ConnectionState] = [:]
    /// apns-id / apns-unique-id values need to be unique, not secret: a cheap generator, seeded once.
    private var uuids: FastRandom
    private var validations = ValidationCache()
    let shared: SimulatorShared
    private var log: PushLog? { shared.log }
    /// `{"reason":…}` of `goAwayReason`, encoded once (empty: no reason given).
    private let goAwayDebugData: [UInt8]
    /// Which server (device or management) each connection came in on.
    var managementConnections = Set<ObjectIdentifier>()
    private var fcm: FCMSimulatorHandler

    struct ConnectionState {
        var requests = 0
        var acceptedPushes = 0
        var credentials = ConnectionCredentials()
        /// Whether it made an FCM request yet (and got FCM's stream limit).
        var speaksFCM = false
    }

    init(configuration: SimulatorConfiguration, shared: SimulatorShared) {
        self.configuration = configuration
        goAwayDebugData = configuration.goAwayReason.map { reason in
            var writer = JSONWriter()
            writer.beginObject(); writer.key("reason"); writer.string(reason); writer.endObject()
            return writer.bytes
        } ?? []
        self.shared = shared
        verifier = ProviderTokenVerifier(trusting: configuration.trustedKeys)
        uuids = FastRandom(seed: configuration.seed != 0 ? configuration.seed : RandomSource.shared.next())
        // A generator of its own, never drawn from `uuids`: a seeded APNs fault run must see the
        // same sequence with FCM in the simulator as without it.
        let fcmSeed = configuration.seed != 0 ? configuration.seed ^ 0x4643_4d00_0000_0000 : RandomSource.shared.next()
        fcm = FCMSimulatorHandler(configuration: configuration, shared: shared, random: FastRandom(seed: fcmSeed))
    }

    func connectionOpened(_ connection: ServerConnection) {
        connectionState[ObjectIdentifier(connection)] = ConnectionState()
        shared.counters.withLock { $0.connections += 1 }
    }

    func connectionClosed(_ connection: ServerConnection) {
        connectionState[ObjectIdentifier(connection)] = nil
        managementConnections.remove(ObjectIdentifier(connection))
    }

    func responseSent(_ response: ServerResponse, on connection: ServerConnection) {
        guard let note = response.note else { return }
        // note = "<token or channel>\n<log line>" for accepted pushes. Split on its UTF-8 bytes:
        // a Character walk over a 160-byte FCM token was a tenth of the simulator's time.
        let utf8 = note.utf8
        let split = utf8.firstIndex(of: UInt8(ascii: "\n")) ?? utf8.endIndex
        let fcm = utf8.starts(with: FCMSimulatorHandler.acceptedNotePrefix.utf8)
        let tracked = configuration.trackTokens
            ? String(note[(fcm ? utf8.index(utf8.startIndex, offsetBy: FCMSimulatorHandler.acceptedNotePrefix.utf8.count) : utf8.startIndex)..<split])
            : nil
        shared.counters.withLock {
            if fcm { $0.fcmAccepted += 1 } else { $0.accepted += 1 }
            if let tracked {
                if fcm { $0.fcmAcceptedPerToken[tracked, default: 0] += 1 } else { $0.acceptedPerToken[tracked, default: 0] += 1 }
            }
        }
        if let log, split < utf8.endIndex { log.append(note[utf8.index(after: split)...]) }
    }

    func handle(_ request: ServerRequest, on connection: ServerConnection) {
        let id = ObjectIdentifier(connection)
        var state = connectionState[id] ?? ConnectionState()
        state.requests += 1
        defer { connectionState[id] = state }
        let isManagement = managementConnections.contains(id)

        let pushRequests = isManagement ? 0 : shared.pushRequests.add(1, ordering: .relaxed).newValue
        if configuration.resetAfter > 0 && !isManagement && pushRequests % configuration.resetAfter == 0 {
            shared.counters.withLock { $0.connectionsDropped += 1 }
            connection.drop()
            return
        }
        if configuration.stallAfter > 0 && !isManagement && pushRequests == configuration.stallAfter {
            shared.counters.withLock { $0.connectionsStalled += 1 }
            connection.stall()
            return
        }
        if !isManagement && FCMSimulatorHandler.handles(request.path) {
            if !state.speaksFCM {
                state.speaksFCM = true
                connection.setMaximumStreams(configuration.fcmMaximumStreams)
            }
            respond(connection, request, fcm.answer(request))
        } else {
            handleAPNs(request, on: connection, state: &state, isManagement: isManagement)
        }
        if configuration.goAwayAfter > 0 && !isManagement && pushRequests % configuration.goAwayAfter == 0 {
            shared.counters.withLock { $0.goAwaysSent += 1 }
            connection.goAway(lastStreamID: request.streamID, debugData: goAwayDebugData)
        }
    }

    /// Routes, authenticates, checks and answers one APNs request.
    private func handleAPNs(_ request: ServerRequest, on connection: ServerConnection, state: inout ConnectionState, isManagement: Bool) {
        do throws(RequestRules.Refusal) {
            let route = try RequestRules.route(method: request.method, path: request.path, managementPort: isManagement)
            try RequestRules.checkDuplicates(request.headers)
            try authenticate(request, state: &state)
            switch route {
            case let .devicePush(token):
                let bundles = configuration.bundles
                if let refusal = validations.verdict(headers: request.headers, body: request.body, compute: { headers in
                    do throws(RequestRules.Refusal) {
                        _ = try RequestRules.checkDevicePush(headers: headers, body: request.body, bundles: bundles)
                        return nil
                    } catch { return error }
                }) { throw refusal }
                let apnsID = request.header(HeaderName.apnsID)
                if let apnsID, (try? APNsID(apnsID)) == nil { throw RequestRules.Refusal(reason: .badMessageId) }
                if configuration.unregisteredTokens.contains(token) {
                    throw RequestRules.Refusal(reason: .unregistered)
                }
                try injectFault()
                var identity = [(name: HeaderName.apnsID, value: apnsID ?? APNsID.random(using: &uuids).text)]
                if let requestID = request.header(HeaderName.requestID) { identity.append((HeaderName.requestID, requestID)) }
                accept(request, on: connection, state: &state, key: token, identity: identity)
            case let .broadcast(bundle):
                let (channel, expiration) = try RequestRules.checkBroadcast(headers: request.headers, body: request.body,
                                                                           bundle: bundle, bundles: configuration.bundles)
                guard let policy = shared.channels.withLock({ $0[bundle]?[channel] }) else { throw RequestRules.Refusal(reason: .channelNotRegistered) }
                if policy == 0 && expiration != 0 {
                    throw RequestRules.Refusal(reason: .badExpirationDate, detail: "a No-Message-Stored channel takes apns-expiration 0")
                }
                try injectFault()
                // Broadcasts are identified by apns-request-id (echoed or generated), not apns-id (APNS.md §9.1).
                accept(request, on: connection, state: &state, key: channel, identity: requestIDHeader(request))
            case let .channels(bundle):
                shared.counters.withLock { $0.channelRequests += 1 }
                try RequestRules.checkRequestID(request.headers)
                try manageChannel(request, bundle: bundle, on: connection)
            case let .allChannels(bundle):
                shared.counters.withLock { $0.channelRequests += 1 }
                try RequestRules.checkRequestID(request.headers)
                // Another app's channels: 403 TopicMismatch, as on /channels (APNS.md §9.3).
                if !configuration.bundles.isEmpty && !configuration.bundles.contains(bundle) {
                    throw RequestRules.Refusal(reason: .topicMismatch, detail: bundle)
                }
                var writer = JSONWriter()
                writer.beginObject(); writer.key("channels"); writer.beginArray()
                for channel in shared.channels.withLock({ ($0[bundle] ?? [:]).keys.sorted() }) { writer.string(channel) }
                writer.endArray(); writer.endObject()
                respond(connection, request, ServerResponse(status: 200, headers: requestIDHeader(request), body: writer.bytes))
            }
        } catch {
            refuse(request, on: connection, error, withRequestID: isManagement || request.path.hasPrefix("/4/"))
        }
    }

    // MARK: Parts

    /// APNs' provider-token rules: a valid ES256 JWT of a trusted key, one team per connection, one
    /// key per connection, and no switch to a new token within 20 minutes of the current one.
    private func authenticate(_ request: ServerRequest, state: inout ConnectionState) throws(RequestRules.Refusal) {
        let authorization = request.header("authorization")
        let verified: VerifiedProviderToken
        do {
            verified = try verifier.verify(authorization: authorization)
        } catch {
            throw RequestRules.Refusal(reason: Reason(error.apnsReason), detail: error.description)
        }
        let jwt = authorization ?? "", now = WallClock.seconds()
        switch configuration.tokenScope {
        case .connection:
            try state.credentials.admit(verified, jwt: jwt, now: now)
        case .key:
            // The lock is taken only when this connection presents a token other than its own
            // current one (its first request, or a switch): the common request skips it.
            if state.credentials.jwt != jwt {
                try state.credentials.check(verified, jwt: jwt, now: now, limitSwitches: false)
                let refusal = shared.keyTokens.withLock { updates -> RequestRules.Refusal? in
                    do throws(RequestRules.Refusal) {
                        try updates.admit(teamID: verified.teamID, keyID: verified.keyID, jwt: jwt, now: now)
                        return nil
                    } catch { return error }
                }
                if let refusal { throw refusal }
                state.credentials.adopt(verified, jwt: jwt, now: now)
            }
        }
    }

    private func injectFault() throws(RequestRules.Refusal) {
        for fault in configuration.faults where fault.fraction > 0 {
            if nextRandom() < fault.fraction { throw RequestRules.Refusal(reason: Reason(fault.reason), detail: "injected") }
        }
    }

    /// Answers 200 with `identity` (the push's apns-id, or a broadcast's apns-request-id) and
    /// apns-unique-id; the push is counted and logged when the answer actually leaves.
    private func accept(_ request: ServerRequest, on connection: ServerConnection, state: inout ConnectionState, key: String,
                        identity: [(name: String, value: String)]) {
        state.acceptedPushes += 1
        if state.acceptedPushes == 1 && configuration.oneStreamUntilFirstPush {
            connection.setMaximumStreams(configuration.maximumStreams)
        }
        var headers = identity
        if configuration.sendsUniqueID { headers.append((HeaderName.uniqueID, APNsID.random(using: &uuids).text)) }
        let line = log == nil ? "" : "\n" + PushLog.line(for: request)
        respond(connection, request, ServerResponse(status: 200, headers: headers, note: key + line))
    }

    private func manageChannel(_ request: ServerRequest, bundle: String, on connection: ServerConnection) throws(RequestRules.Refusal) {
        if !configuration.bundles.isEmpty && !configuration.bundles.contains(bundle) {
            throw RequestRules.Refusal(reason: .topicMismatch, detail: bundle)
        }
        switch request.method {
        case "POST":
            let policy = try RequestRules.checkChannelCreate(body: request.body)
            // 18 random bytes: 24 base64 characters, as APNs' IDs were observed (standard alphabet).
            let id = String(Base64URL.encode(RandomSource.shared.bytes(18)).map { $0 == "-" ? "+" : $0 == "_" ? "/" : $0 })
            let created = shared.channels.withLock { table -> Bool in
                guard (table[bundle]?.count ?? 0) < 10_000 else { return false }
                table[bundle, default: [:]][id] = policy
                return true
            }
            guard created else { throw RequestRules.Refusal(reason: .cannotCreateChannelConfig) }
            respond(connection, request, ServerResponse(status: 201, headers: [(HeaderName.channelID, id)] + requestIDHeader(request)))
        case "GET":
            let id = try channelID(of: request)
            guard let policy = shared.channels.withLock({ $0[bundle]?[id] }) else { throw RequestRules.Refusal(reason: .channelNotRegistered) }
            let body = Array("{\"message-storage-policy\":\(policy),\"push-type\":\"LiveActivity\"}".utf8)
            respond(connection, request, ServerResponse(status: 200, headers: [(HeaderName.channelID, id)] + requestIDHeader(request), body: body))
        default:  // DELETE
            let id = try channelID(of: request)
            guard shared.channels.withLock({ $0[bundle]?.removeValue(forKey: id) }) != nil else { throw RequestRules.Refusal(reason: .badPath, detail: "no such channel") }
            respond(connection, request, ServerResponse(status: 204, headers: requestIDHeader(request)))
        }
    }

    private func channelID(of request: ServerRequest) throws(RequestRules.Refusal) -> String {
        guard let id = request.header(HeaderName.channelID), !id.isEmpty else { throw RequestRules.Refusal(reason: .missingChannelId) }
        do { _ = try ChannelID(id) } catch { throw RequestRules.Refusal(reason: .badChannelId) }
        return id
    }

    /// The request's own apns-request-id echoed, or a generated one when it sent none or a malformed
    /// one (refused with BadMessageId, and not worth echoing).
    private func requestIDHeader(_ request: ServerRequest) -> [(name: String, value: String)] {
        if let given = request.header(HeaderName.requestID), (try? APNsID(given)) != nil { return [(HeaderName.requestID, given)] }
        return [(HeaderName.requestID, APNsID.random(using: &uuids).text)]
    }

    /// Answers APNs' error: status, `{"reason":…}`, and the request's identity — apns-id on device
    /// pushes, apns-request-id on broadcasts and channel management (APNS.md §9.3).
    private func refuse(_ request: ServerRequest, on connection: ServerConnection, _ refusal: RequestRules.Refusal, withRequestID: Bool) {
        var writer = JSONWriter()
        writer.beginObject()
        writer.key("reason"); writer.string(refusal.reason.name)
        if refusal.reason == .unregistered {
            // Milliseconds, as APNs sends it: the moment the token stopped being valid.
            writer.key("timestamp"); writer.int(WallClock.seconds() * 1000)
        }
        writer.endObject()
        shared.counters.withLock { $0.rejected[refusal.reason.name, default: 0] += 1 }
        var headers: [(name: String, value: String)] = [("content-type", "application/json")]
        if let seconds = configuration.retryAfterSeconds, refusal.reason.status == 429 || refusal.reason.status == 503 {
            headers.append(("retry-after", String(seconds)))
        }
        if withRequestID {
            headers += requestIDHeader(request)
        } else if let apnsID = request.header(HeaderName.apnsID) {
            headers.append((HeaderName.apnsID, apnsID))
        }
        respond(connection, request, ServerResponse(status: refusal.reason.status, headers: headers, body: writer.bytes))
    }

    private func respond(_ connection: ServerConnection, _ request: ServerRequest, _ response: ServerResponse) {
        let slow = configuration.slowFraction > 0 && nextRandom() < configuration.slowFraction
        if slow { shared.counters.withLock { $0.answersHeldBack += 1 } }
        connection.respond(streamID: request.streamID, response, delay: slow ? configuration.slowDelay : configuration.latency)
    }

    private func nextRandom() -> Double { uuids.unitInterval() }
}

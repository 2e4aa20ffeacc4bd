import Crypto
import FCM
import HTTP2
import IO
import JSONCore
import Vocabulary

/// The FCM half of the simulator, on the same port as APNs, told apart by path: `POST /token`
/// (the OAuth endpoint of the service account the simulator wrote) and
/// `POST /v1/projects/{id}/messages:send`. One per loop thread, owned by `SimulatorHandler`, which
/// sends what this answers (with the latency and slow faults) and counts accepted messages when
/// the answer leaves, like APNs pushes.
struct FCMSimulatorHandler {
    /// The note of an accepted message: this prefix, then its token (APNs notes never hold a space).
    static let acceptedNotePrefix = "fcm "

    let configuration: SimulatorConfiguration
    let shared: SimulatorShared
    var random: FastRandom
    /// The last group's body shape: bodies that differ only in the token are checked once.
    var bodies = FCMBodyShape()
    /// `{"name":"projects/<id>/messages/` as JSON, written on the first answer.
    var namePrefix: [UInt8] = []
    /// The last authorization header found good: until when, as of which expiry generation.
    var lastAuthorized: (header: String, until: MonotonicInstant, generation: Int)?
    private var state: FCMSimulatorState { shared.fcm }

    /// Whether `path` is FCM's (everything else is APNs').
    static func handles(_ path: String) -> Bool { path == "/token" || path.hasPrefix("/v1/") }

    mutating func answer(_ request: ServerRequest) -> ServerResponse {
        if request.path == "/token" { return token(request) }
        do throws(FCMRefusal) {
            let send = try check(request)
            // {"name":"projects/<id>/messages/<message id>"}: the quoted prefix is written once.
            if namePrefix.isEmpty {
                var writer = JSONWriter()
                writer.beginObject(); writer.key("name"); writer.string("projects/\(state.projectID)/messages/")
                namePrefix = writer.bytes.dropLast()  // without the closing quote
            }
            var body = namePrefix
            body.reserveCapacity(namePrefix.count + 48)
            if send.validateOnly { body += "fake_message_id".utf8 } else { appendMessageID(to: &body) }
            body += #""}"#.utf8
            // With a push log (`--log`), the accepted message's line as for an APNs push (path, headers, body).
            let line = configuration.logPath == nil ? "" : "\n" + PushLog.line(for: request)
            let note = send.validateOnly ? nil : Self.acceptedNotePrefix + (send.token ?? "") + line
            return ServerResponse(status: 200, headers: [("content-type", "application/json; charset=UTF-8")], body: body, note: note)
        } catch {
            shared.counters.withLock { $0.fcmRejected[error.counterName, default: 0] += 1 }
            var headers = [("content-type", "application/json; charset=UTF-8")]
            if let seconds = error.retryAfter ?? (error.status == 503 ? configuration.retryAfterSeconds : nil) {
                headers.append(("retry-after", String(seconds)))
            }
            return ServerResponse(status: error.status, headers: headers, body: error.body.json)
        }
    }

    /// A send, in Google's order: path, bearer, project, quota (client errors count), body, token,
    /// then the injected faults.
    private mutating func check(_ request: ServerRequest) throws(FCMRefusal) -> FCMMessageRules.Send {
        guard request.method == "POST", let project = FCMEndpoint.projectID(inSendPath: request.path) else { throw .notFound }
        guard isAuthorized(request.header("authorization") ?? "") else { throw .unauthenticated }
        guard project == state.projectID else { throw .permissionDenied(project: project) }
        if let wait = state.admit() { throw .quotaExceeded(retryAfter: Int(wait.components.seconds)) }
        let send = try bodies.check(request.body)
        if let token = send.token {
            if !configuration.fcmUnregisteredTokens.isEmpty && configuration.fcmUnregisteredTokens.contains(token) { throw .unregistered }
            if !configuration.fcmForeignTokens.isEmpty && configuration.fcmForeignTokens.contains(token) { throw .senderIDMismatch }
        }
        for fault in configuration.fcmFaults where fault.fraction > 0 && random.unitInterval() < fault.fraction {
            if let refusal = FCMRefusal.injected(fault.name) { throw refusal }
        }
        return send
    }

    /// Whether `authorization` is `Bearer <a token granted here, not expired>`. The last one
    /// found good is remembered with its expiry and the state's expiry generation, so a
    /// connection presenting one token does not hash it under the shared lock per message.
    private mutating func isAuthorized(_ authorization: String) -> Bool {
        let now = MonotonicInstant.now()
        if let last = lastAuthorized, last.generation == state.expiryGeneration, now < last.until, last.header == authorization {
            return true
        }
        let scheme = "bearer ".utf8
        let utf8 = authorization.utf8
        guard utf8.count > scheme.count, zip(utf8, scheme).allSatisfy({ $0 == $1 || ($1 >= UInt8(ascii: "a") && $0 | 0x20 == $1) }),
              let until = state.expiry(of: authorization.utf8.dropFirst(scheme.count)) else { return false }
        lastAuthorized = (authorization, until, state.expiryGeneration)
        return now < until
    }

    /// `POST /token`: an access token for a good assertion, Google's OAuth refusal otherwise.
    private func token(_ request: ServerRequest) -> ServerResponse {
        let json = [("content-type", "application/json; charset=utf-8")]
        guard request.method == "POST", let rules = state.tokenRules else {
            return ServerResponse(status: 405, headers: json, body: OAuthErrorBody(error: "invalid_request", errorDescription: "Use POST.").json)
        }
        do throws(OAuthRefusal) {
            try rules.check(contentType: request.header("content-type"), body: request.body, now: WallClock.seconds())
            // A deleted key: Google's answer to an assertion it signed (the signature no longer checks).
            if state.revoked { throw OAuthRefusal("invalid_grant", "Invalid JWT Signature.") }
        } catch {
            shared.counters.withLock { $0.fcmTokensRefused[error.body.error, default: 0] += 1 }
            return ServerResponse(status: 400, headers: json, body: error.body.json)
        }
        let lifetime = configuration.fcmAccessTokenLifetime
        var writer = JSONWriter()
        writer.beginObject()
        writer.key("access_token"); writer.string(state.grant(lifetime: lifetime))
        writer.key("expires_in"); writer.int(lifetime.components.seconds)
        writer.key("token_type"); writer.string("Bearer")
        writer.endObject()
        shared.counters.withLock { $0.fcmTokensGranted += 1 }
        return ServerResponse(status: 200, headers: json, body: writer.bytes)
    }

    /// `0:<microseconds>%<16 hex>`, the shape of Google's message IDs (nothing JSON escapes).
    private mutating func appendMessageID(to out: inout [UInt8]) {
        out += "0:".utf8
        // The decimal digits written lowest first, then turned around in place (no String).
        var microseconds = WallClock.milliseconds() * 1000
        let start = out.count
        repeat {
            out.append(UInt8(ascii: "0") + UInt8(microseconds % 10))
            microseconds /= 10
        } while microseconds > 0
        out[start...].reverse()
        out.append(UInt8(ascii: "%"))
        withUnsafeBytes(of: random.next()) { Hex.append(contentsOf: $0, to: &out) }
    }
}

import DaemonConfiguration
import Runtime
import APNs
import Crypto
import Fanout
import HTTPAPI
import JSONCore
import TokenStore
import Vocabulary

/// The app-facing API, called by phones (no admin token):
/// - `POST /v1/installations`: a first registration, an iOS or (`"platform":"android"`) an
///   Android phone's; 201 with the installation's secret, shown this once (the store keeps only
///   its SHA-256).
/// - `PUT /v1/installations/{id}`, `POST /v1/installations/{id}/activities`,
///   `DELETE /v1/installations/{id}`: with `Authorization: Installation <secret>`.
/// These run on an `APIWorker` (the router sends them there: the installation and its secret are
/// store reads), and writes go through `TokenStore.submit` and answer `.deferred` from the writer
/// thread, so neither the HTTP thread nor the worker waits for a commit (a durable one is an
/// fsync: milliseconds on an SD card). The handlers are static: they see the runtime only
/// through their `InstallationDesk`.
extension Router {
    package static let installationsPath = "/v1/installations"

    /// Whether `installationAnswer` answers `path` (the router sends those to a worker).
    static func isInstallationRoute(_ path: String) -> Bool {
        path == installationsPath || path.hasPrefix(installationsPath + "/")
    }

    /// The answer for an app route, or nil when the path is not one.
    package static func installationAnswer(_ request: HTTPRequest, installations: any InstallationDesk) -> HTTPAnswer? {
        if request.path == Self.installationsPath {
            guard request.method == "POST" else {
                return .response(.error(status: 404, code: "not_found", message: "no such route: \(request.method) \(request.path)"))
            }
            return register(request, installations: installations)
        }
        guard request.path.hasPrefix(Self.installationsPath + "/") else { return nil }
        let rest = request.path.dropFirst(Self.installationsPath.count + 1)
        let parts = rest.split(separator: "/", omittingEmptySubsequences: false)
        let id = String(parts[0])
        switch (request.method, parts.count, parts.count == 2 ? parts[1] : "") {
        case ("PUT", 1, _): return update(request, id: id, installations: installations)
        case ("DELETE", 1, _): return remove(request, id: id, installations: installations)
        case ("POST", 2, "activities"): return putActivity(request, id: id, installations: installations)
        default:
            return .response(.error(status: 404, code: "not_found", message: "no such route: \(request.method) \(request.path)"))
        }
    }

    private static func invalid(_ error: EventError) -> HTTPAnswer {
        .response(.error(status: 400, code: "invalid_body", message: error.description))
    }

    package static func unknownApp(_ app: BundleID, _ environment: Environment) -> HTTPAnswer {
        .response(.error(status: 422, code: "unknown_app", message: "app: \(app.text) in \(environment.rawValue) is not configured on this daemon"))
    }

    // MARK: Registration

    private static func register(_ request: HTTPRequest, installations: any InstallationDesk) -> HTTPAnswer {
        let body: InstallationBody
        do { body = try InstallationBody(json: request.body) } catch { return Self.invalid(error) }
        guard installations.serves(body.app, body.environment) else { return Self.unknownApp(body.app, body.environment) }
        let id = body.installationID ?? Self.newInstallationID()
        let exists = HTTPAnswer.response(.error(status: 409, code: "installation_exists",
                                                message: "installationId: '\(id)' is registered; change it with PUT /v1/installations/{id} and its secret"))
        // Two first registrations of one id at once would both find it absent, and the later
        // commit would replace the earlier one's secret: its phone would hold a secret that no
        // longer works. The id is claimed here until its write committed; a second claim is a 409.
        guard installations.claimRegistration(id) else { return exists }
        let release: @Sendable () -> Void = { [weak installations] in installations?.releaseRegistration(id) }
        switch Self.lookUp(id, installations: installations) {
        case let .failure(refusal): release(); return refusal.answer
        case .success(.some):
            // A known id needs its secret: otherwise anyone knowing an id could take the
            // installation over (and be handed a new secret).
            release()
            return exists
        case .success(.none): break
        }
        let secret = RandomSource.shared.bytes(32)
        var writer = JSONWriter()
        writer.beginObject()
        writer.key("installationId"); writer.string(id)
        writer.key("secret"); writer.string(Base64URL.encode(secret))
        writer.endObject()
        return write(Self.registrations(body, id: id, secretHash: SHA256.hash(secret)), installations: installations, success: .json(status: 201, writer.bytes),
                     then: release)
    }

    private static func update(_ request: HTTPRequest, id: String, installations: any InstallationDesk) -> HTTPAnswer {
        let installation: Installation
        switch Self.authorize(request, id: id, installations: installations) {
        case let .failure(refusal): return refusal.answer
        case let .success(found): installation = found
        }
        let body: InstallationBody
        do { body = try InstallationBody(json: request.body) } catch { return Self.invalid(error) }
        if let given = body.installationID, given != id {
            return Self.invalid(EventError(field: "installationId", "is '\(given)' but the URL names '\(id)'; leave it out or make them agree"))
        }
        guard installations.serves(body.app, body.environment) else { return Self.unknownApp(body.app, body.environment) }
        // An installation belongs to one app: its secret is no key to another app's.
        guard body.app.text == installation.app, body.environment == installation.environment else {
            return .response(.error(status: 409, code: "app_mismatch",
                                    message: "app: installation '\(id)' belongs to \(installation.app) in \(installation.environment.rawValue)"))
        }
        // One phone, one system: checked here so the phone gets a 409 naming it, not a failed
        // write (the store refuses the mix too: `Installation.checkPlatform`).
        if let held = installation.platform, held != body.platform {
            return .response(.error(status: 409, code: "platform_mismatch",
                                    message: "platform: installation '\(id)' is an \(held.displayName) installation; "
                                        + "register the \(body.platform.displayName) phone with POST /v1/installations"))
        }
        var writer = JSONWriter()
        writer.beginObject(); writer.key("installationId"); writer.string(id); writer.endObject()
        return write(Self.registrations(body, id: id, secretHash: nil), installations: installations, success: .json(writer.bytes))
    }

    /// One registration per token kind given, each with the body's topics. `registeredAt` is now:
    /// this is the phone itself registering, which is what a later 410's timestamp is compared with.
    private static func registrations(_ body: InstallationBody, id: String, secretHash: [UInt8]?) -> [WriteOperation] {
        let now = WallClock.milliseconds()
        return body.tokens.map { token in
            .register(TokenRegistration(installationID: id, app: body.app.text, environment: body.environment, kind: token.kind,
                                        token: token.token, topics: body.topics, secretHash: secretHash, registeredAt: now,
                                        broadcast: body.broadcast), at: now)
        }
    }

    // MARK: Activities and removal

    private static func putActivity(_ request: HTTPRequest, id: String, installations: any InstallationDesk) -> HTTPAnswer {
        let installation: Installation
        switch Self.authorize(request, id: id, installations: installations) {
        case let .failure(refusal): return refusal.answer
        case let .success(found): installation = found
        }
        let body: ActivityBody
        do { body = try ActivityBody(json: request.body) } catch { return Self.invalid(error) }
        let record = ActivityRecord(id: body.activityID, app: installation.app, environment: installation.environment, updateToken: body.token,
                                    eventKey: body.eventKey, startedAt: WallClock.milliseconds(), topic: body.topic)
        var writer = JSONWriter()
        writer.beginObject(); writer.key("activityId"); writer.string(body.activityID); writer.endObject()
        return write([.putActivity(record)], installations: installations, success: .json(status: 201, writer.bytes))
    }

    private static func remove(_ request: HTTPRequest, id: String, installations: any InstallationDesk) -> HTTPAnswer {
        if case let .failure(refusal) = Self.authorize(request, id: id, installations: installations) { return refusal.answer }
        return write([.removeInstallation(id: id)], installations: installations, success: HTTPResponse(status: 204))
    }

    // MARK: Helpers

    /// Queues `operations` and answers from the writer thread once they committed.
    /// `then` runs once the write committed or failed.
    private static func write(_ operations: [WriteOperation], installations: any InstallationDesk, success: HTTPResponse,
                              then: @escaping @Sendable () -> Void = {}) -> HTTPAnswer {
        .deferred { responder in
            do throws(StoreError) {
                try installations.commit(operations) { result in
                    then()
                    switch result {
                    case .success: responder.respond(success)
                    case let .failure(error): responder.respond(.error(status: 503, code: "store_unavailable", message: error.description))
                    }
                }
            } catch {
                then()
                // `submit` validates before queueing: a value the store refuses is the body's fault.
                responder.respond(.error(status: 400, code: "invalid_body", message: error.description))
            }
        }
    }

    private static func lookUp(_ id: String, installations: any InstallationDesk) -> Result<Installation?, AnswerError> {
        do { return .success(try installations.installation(id: id)) } catch {
            return .failure(AnswerError(.response(.error(status: 503, code: "store_unavailable", message: error.description))))
        }
    }

    /// The installation, if the request carries its secret: 401 without one, 404 for an unknown
    /// id, 403 for a wrong secret (or an installation that never had one, e.g. imported).
    private static func authorize(_ request: HTTPRequest, id: String, installations: any InstallationDesk) -> Result<Installation, AnswerError> {
        let scheme = "installation "
        guard let header = request.header("authorization"), header.lowercased().hasPrefix(scheme) else {
            var response = HTTPResponse.error(status: 401, code: "unauthorized", message: "this route needs Authorization: Installation <secret>")
            response.headers.append(("WWW-Authenticate", "Installation"))
            return .failure(AnswerError(.response(response)))
        }
        let installation: Installation
        switch lookUp(id, installations: installations) {
        case let .failure(error): return .failure(error)
        case .success(.none):
            return .failure(AnswerError(.response(.error(status: 404, code: "not_found", message: "no installation '\(id)'; register it with POST /v1/installations"))))
        case let .success(.some(found)): installation = found
        }
        let given = SHA256.hash(Base64URL.decode(header.dropFirst(scheme.count)) ?? [])
        guard ConstantTime.equal(given, installation.secretHash) else {
            return .failure(AnswerError(.response(.error(status: 403, code: "forbidden", message: "the installation's secret is wrong"))))
        }
        return .success(installation)
    }

    /// A version 4 UUID from the system's random source: an id no other phone will pick.
    package static func newInstallationID() -> String {
        UUIDText.version4(RandomSource.shared.bytes(16))
    }
}

/// A refusal carried through a `Result` (an answer, already shaped).
package struct AnswerError: Error {
    package let answer: HTTPAnswer
    package init(_ answer: HTTPAnswer) { self.answer = answer }
}

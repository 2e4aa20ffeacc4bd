import IO
import DaemonConfiguration
import Runtime
import Crypto
import Fanout
import HTTPAPI
import JSONCore
import TokenStore
import Vocabulary

/// The daemon's HTTP API: which path does what, who may call it, and the JSON it answers. Runs on
/// the HTTP thread, which never waits: a fan-out goes to the event queue, and whatever reads or
/// writes the store, asks Redis or scans goes to an `APIWorker` and answers `.deferred`, so every
/// other client is answered in microseconds meanwhile.
///
/// Routes (versioned under /v1; `openapi.json` in the repository describes them):
/// - `GET /` (the status page, unless `statusPage` is off), `GET /healthz`, `GET /readyz`,
///   `GET /metrics`: no authentication (bind the API to loopback
///   or a private network; the default listens on 127.0.0.1 only).
/// - backends, with `Authorization: Bearer <admin token>`: `POST /v1/events` (202 + its URL),
///   `GET /v1/events`, `GET /v1/events/{key}/{serial}`, `GET /v1/tokens/stats`, `POST /v1/promote`
///   (a standby becomes the primary; `Service+Standby.swift`), and the channel
///   routes of `ChannelRoutes.swift`.
/// - phones, without the admin token: `/v1/installations…` (see `InstallationRoutes.swift`).
///
/// `package` only for the fuzz targets (Tests/FuzzTargets), which call its pure helpers.
package final class Router: @unchecked Sendable {
    // @unchecked: `service` is set once, before the server starts, and only read afterwards.
    package weak var service: Service?
    /// The API's work off its thread (`APIWorker`): the event routes on one thread (submissions
    /// in arrival order), the rest on two.
    let eventWorker = APIWorker(name: "sokuho-api-events", threads: 1, capacity: 64)
    let apiWorker = APIWorker(name: "sokuho-api", threads: 2, capacity: 256)

    package init() {}

    /// Stops the workers, after the server: a queued submission is recorded and queued, or not at all.
    func stopWorkers() {
        eventWorker.stop()
        apiWorker.stop()
    }

    package func answer(_ request: HTTPRequest) -> HTTPAnswer {
        guard let service else { return .response(.error(status: 503, code: "stopping", message: "the daemon is stopping")) }
        if request.path.hasPrefix("/v1/"), let limiter = service.rateLimiter, let wait = limiter.admit(Self.host(of: request.clientAddress)) {
            var response = HTTPResponse.error(status: 429, code: "rate_limited", message: "too many requests from this address; retry after the Retry-After seconds")
            response.headers.append(("Retry-After", String(max(1, (wait.milliseconds + 999) / 1000))))
            return .response(response)
        }
        switch (request.method, request.path) {
        case ("GET", "/healthz"):
            return .response(.json(Array(#"{"status":"ok"}"#.utf8)))
        case ("GET", "/readyz"):
            return .response(readiness(service))
        case ("GET", "/") where service.configuration.statusPage:
            return withTokenStatistics(service, within: .seconds(60)) { [service] tokens in
                var response = HTTPResponse.html(StatusPage.render(service, tokens: tokens))
                // The page is a snapshot of moving numbers: a reload must ask again.
                response.headers.append(("Cache-Control", "no-store"))
                return response
            }
        case ("GET", "/metrics"):
            return withTokenStatistics(service, within: .seconds(60)) { [service] tokens in
                var response = HTTPResponse.text(service.metrics.render(service, tokens: tokens))
                response.headers = [("Content-Type", "text/plain; version=0.0.4; charset=utf-8")]
                return response
            }
        default:
            break
        }
        guard request.path.hasPrefix("/v1/") else {
            return .response(.error(status: 404, code: "not_found", message: "no such path: \(request.path)"))
        }
        // A standby takes no registrations: phones retry, and reach the primary.
        if service.isStandby, request.path.hasPrefix("/v1/installations") {
            return .response(.error(status: 503, code: "standby", message: Service.standbyMessage))
        }
        // Phones authenticate with their installation's secret, not the admin token.
        // Their store reads (the installation, its secret) run on a worker too, not only the commit.
        if Self.isInstallationRoute(request.path) {
            return apiWorker.answer { [self] in
                installationAnswer(request, service: service)
                    ?? .response(.error(status: 404, code: "not_found", message: "no such route: \(request.method) \(request.path)"))
            }
        }
        if let refusal = Self.checkAdmin(request, service: service) { return .response(refusal) }
        if service.isStandby, request.method != "GET", request.path.hasPrefix("/v1/channels") {
            return .response(.error(status: 503, code: "standby", message: Service.standbyMessage))
        }
        if let answer = channelAnswer(request, service: service) { return answer }
        switch (request.method, request.path) {
        case ("POST", "/v1/events"):
            return eventWorker.answer { [self] in .response(submit(request, service: service)) }
        case ("GET", "/v1/events"):
            var writer = JSONWriter()
            writer.beginObject(); writer.key("events"); writer.beginArray()
            for entry in service.events.recent() { Self.write(entry, to: &writer) }
            writer.endArray(); writer.endObject()
            return .response(.json(writer.bytes))
        case ("POST", "/v1/promote"):
            // A promotion copies a shipped backup and reads the store.
            return apiWorker.answer { .response(Self.promotion(service)) }
        case ("GET", "/v1/tokens/stats"):
            return withTokenStatistics(service, within: TokenStatisticsCache.routeAge) { tokens in
                guard let tokens else { return .error(status: 503, code: "store_unavailable", message: "the token store could not be read") }
                return .json(tokens.json(store: nil))
            }
        case ("GET", _) where request.path.hasPrefix("/v1/events/"):
            return eventStatus(String(request.path.dropFirst("/v1/events/".count)), service: service)
        default:
            return .response(.error(status: 404, code: "not_found", message: "no such route: \(request.method) \(request.path)"))
        }
    }

    /// `POST /v1/promote`'s answer (on a worker).
    private static func promotion(_ service: Service) -> HTTPResponse {
        var writer = JSONWriter()
        writer.beginObject()
        switch service.promote() {
        case let .promoted(message):
            writer.key("promoted"); writer.bool(true)
            writer.key("message"); writer.string(message)
        case .alreadyPrimary:
            writer.key("promoted"); writer.bool(false)
            writer.key("message"); writer.string("already the primary")
        }
        writer.key("standby"); writer.bool(false)
        writer.endObject()
        return .json(writer.bytes)
    }

    /// `render` with token statistics at most `age` old: at once from the cache, else on a worker
    /// after a count (`TokenStatisticsCache`). `render` gets nil when the store cannot be read.
    private func withTokenStatistics(_ service: Service, within age: Duration,
                                     _ render: @escaping @Sendable (StoreStatistics?) -> HTTPResponse) -> HTTPAnswer {
        if let tokens = service.tokenStatistics.fresh(within: age) { return .response(render(tokens)) }
        return apiWorker.answer { .response(render(service.tokenStatistics.refreshed(within: age) { service.store })) }
    }

    /// "127.0.0.1:5000" → "127.0.0.1", "[::1]:5000" → "::1": rate limits are per address, not per port.
    package static func host(of address: String) -> String {
        if address.hasPrefix("["), let close = address.firstIndex(of: "]") { return String(address[address.index(after: address.startIndex)..<close]) }
        if let colon = address.lastIndex(of: ":") { return String(address[..<colon]) }
        return address
    }

    /// 401 unless the request carries the admin token (compared in constant time).
    package static func checkAdmin(_ request: HTTPRequest, service: Service) -> HTTPResponse? {
        let expected = service.adminToken.withLock { $0 }
        guard let header = request.header("authorization"), header.lowercased().hasPrefix("bearer ") else {
            var response = HTTPResponse.error(status: 401, code: "unauthorized", message: "this route needs Authorization: Bearer <admin token>")
            response.headers.append(("WWW-Authenticate", "Bearer"))
            return response
        }
        guard ConstantTime.equal(Array(header.utf8.dropFirst(7)), expected) else {
            var response = HTTPResponse.error(status: 401, code: "unauthorized", message: "the admin token is wrong")
            response.headers.append(("WWW-Authenticate", "Bearer error=\"invalid_token\""))
            return response
        }
        return nil
    }

    private func readiness(_ service: Service) -> HTTPResponse {
        let clock = ClockStatus.current()
        var ready = true
        var writer = JSONWriter()
        writer.beginObject()
        writer.key("apps"); writer.beginArray()
        for runtime in service.apps.withLock({ $0 }) {
            let up = runtime.pool.connectionsUp
            let halted = runtime.pool.haltMessage
            if up == 0 || halted != nil { ready = false }
            writer.beginObject()
            writer.key("app"); writer.string(runtime.name)
            writer.key("connectionsUp"); writer.int(up)
            writer.key("halted"); if let halted { writer.string(halted) } else { writer.null() }
            // Reported, not part of readiness: a failed check is a warning for the operator (the
            // standby has the same key), and pushes themselves halt the pool if it is refused.
            writer.key("credentialCheck")
            if let check = runtime.credentialCheck.withLock({ $0 }) {
                writer.beginObject()
                writer.key("ok"); writer.bool(check.ok)
                writer.key("checkedAt"); writer.int(Int(check.checkedAt))
                writer.key("message"); if let message = check.message { writer.string(message) } else { writer.null() }
                writer.endObject()
            } else {
                writer.null()
            }
            writer.endObject()
        }
        writer.endArray()
        writer.key("clockSynchronised"); writer.bool(clock.synchronised)
        // A standby is not ready: a load balancer must send it nothing until it is promoted.
        let standby = service.isStandby
        if standby { ready = false }
        writer.key("standby"); writer.bool(standby)
        // Reported, not part of readiness: a node without Redis still sends from its own store.
        if let replication = service.replication { writer.key("cluster"); replication.readiness(into: &writer) }
        writer.key("ready"); writer.bool(ready)
        writer.endObject()
        return .json(status: ready ? 200 : 503, writer.bytes)
    }
}

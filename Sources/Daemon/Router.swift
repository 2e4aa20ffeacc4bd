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
/// - every method: HEAD wherever GET is (answered as GET, sent without the body); any other method
///   a path does not take is 405 with `Allow` (`allowedMethods`), before the admin token is asked for.
///
/// The router holds the `Service` and decides who may call what (rate limit, admin token,
/// standby); each route family's handlers are static and get only their port of it
/// (`EventDesk`, `InstallationDesk`, `ChannelDesk`, `StatusView`), the rest a value.
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

    package func answer(_ sent: HTTPRequest) -> HTTPAnswer {
        guard let service else { return .response(.error(status: 503, code: "stopping", message: "the daemon is stopping")) }
        if sent.path.hasPrefix("/v1/"), let limiter = service.rateLimiter, let wait = limiter.admit(Self.host(of: sent.clientAddress)) {
            var response = HTTPResponse.error(status: 429, code: "rate_limited", message: "too many requests from this address; retry after the Retry-After seconds")
            response.headers.append(("Retry-After", String(max(1, (wait.milliseconds + 999) / 1000))))
            return .response(response)
        }
        if let refusal = Self.methodRefusal(sent, statusPage: service.configuration.statusPage) { return .response(refusal) }
        // HEAD is answered as GET; the HTTP layer sends the headers (the body's Content-Length
        // included) without the body.
        var asGet = sent
        if asGet.method == "HEAD" { asGet.method = "GET" }
        let request = asGet
        switch (request.method, request.path) {
        case ("GET", "/healthz"):
            return .response(.json(Array(#"{"status":"ok"}"#.utf8)))
        case ("GET", "/readyz"):
            return .response(Self.readiness(service))
        case ("GET", "/") where service.configuration.statusPage:
            return Self.withTokenStatistics(service, within: .seconds(60), worker: apiWorker) { [service] tokens in
                // ?refresh=N (5…3600 s) reloads the page in the browser; anything else is ignored.
                let refresh = request.queryValue("refresh").flatMap { Int($0) }.flatMap { (5...3600).contains($0) ? $0 : nil }
                var response = HTTPResponse.html(StatusPage.render(service, tokens: tokens, refresh: refresh))
                // The page is a snapshot of moving numbers: a reload must ask again.
                response.headers.append(("Cache-Control", "no-store"))
                return response
            }
        case ("GET", "/metrics"):
            return Self.withTokenStatistics(service, within: .seconds(60), worker: apiWorker) { [service] tokens in
                var response = HTTPResponse.text(service.metricsText(tokens: tokens))
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
            return apiWorker.answer {
                Self.installationAnswer(request, installations: service)
                    ?? .response(.error(status: 404, code: "not_found", message: "no such route: \(request.method) \(request.path)"))
            }
        }
        if let refusal = Self.checkAdmin(request, token: service.adminToken.withLock { $0 }) { return .response(refusal) }
        if service.isStandby, request.method != "GET", request.path.hasPrefix("/v1/channels") {
            return .response(.error(status: 503, code: "standby", message: Service.standbyMessage))
        }
        if let answer = Self.channelAnswer(request, channels: service) { return answer }
        switch (request.method, request.path) {
        case ("POST", "/v1/events"):
            return eventWorker.answer { .response(Self.submit(request, events: service)) }
        case ("GET", "/v1/events"):
            return .response(Self.recentEvents(service))
        case ("POST", "/v1/promote"):
            // A promotion copies a shipped backup and reads the store.
            return apiWorker.answer { .response(Self.promotion(service.promote())) }
        case ("GET", "/v1/tokens/stats"):
            return Self.withTokenStatistics(service, within: TokenStatisticsCache.routeAge, worker: apiWorker) { tokens in
                guard let tokens else { return .error(status: 503, code: "store_unavailable", message: "the token store could not be read") }
                return .json(tokens.json(store: nil))
            }
        case ("GET", _) where request.path.hasPrefix("/v1/events/"):
            return Self.eventStatus(String(request.path.dropFirst("/v1/events/".count)), events: service, worker: eventWorker)
        default:
            return .response(.error(status: 404, code: "not_found", message: "no such route: \(request.method) \(request.path)"))
        }
    }

    /// The methods each path takes (HEAD wherever GET is), or nil for a path the API does not have
    /// (answered 404 whatever the method).
    package static func allowedMethods(_ path: String, statusPage: Bool) -> [String]? {
        let read = ["GET", "HEAD"]
        switch path {
        case "/": return statusPage ? read : nil
        case "/healthz", "/readyz", "/metrics", "/v1/tokens/stats": return read
        case "/v1/events", Self.channelsPath: return read + ["POST"]
        case "/v1/promote", Self.installationsPath: return ["POST"]
        default: break
        }
        if path.hasPrefix("/v1/events/") { return read }
        if path.hasPrefix(Self.channelsPath + "/") { return ["DELETE"] }
        if path.hasPrefix(Self.installationsPath + "/") {
            let parts = path.dropFirst(Self.installationsPath.count + 1).split(separator: "/", omittingEmptySubsequences: false)
            if parts.count == 1 { return ["PUT", "DELETE"] }
            if parts.count == 2, parts[1] == "activities" { return ["POST"] }
        }
        return nil
    }

    /// 405 with `Allow` for a method the path does not take, whichever: TRACE, CONNECT and methods
    /// this server does not know alike (RFC 9110 §15.5.6; one answer for all, so a client learns the
    /// path's methods either way). nil: the method is the path's, or the path is none of the API's.
    package static func methodRefusal(_ request: HTTPRequest, statusPage: Bool) -> HTTPResponse? {
        guard let allowed = allowedMethods(request.path, statusPage: statusPage), !allowed.contains(request.method) else { return nil }
        // evhttp does not keep the name of a method it does not know.
        let method = request.method == "UNKNOWN" ? "the request's method" : request.method
        var response = HTTPResponse.error(status: 405, code: "method_not_allowed",
                                          message: "\(method) is not a method of \(request.path); it takes \(allowed.joined(separator: ", "))")
        response.headers.append(("Allow", allowed.joined(separator: ", ")))
        return response
    }

    /// `POST /v1/promote`'s answer (on a worker), for what the promotion came to.
    private static func promotion(_ promotion: Promotion) -> HTTPResponse {
        var writer = JSONWriter()
        writer.beginObject()
        switch promotion {
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
    private static func withTokenStatistics(_ status: any StatusView, within age: Duration, worker: APIWorker,
                                            _ render: @escaping @Sendable (StoreStatistics?) -> HTTPResponse) -> HTTPAnswer {
        if let tokens = status.freshTokenStatistics(within: age) { return .response(render(tokens)) }
        return worker.answer { .response(render(status.countedTokenStatistics(within: age))) }
    }

    /// "127.0.0.1:5000" → "127.0.0.1", "[::1]:5000" → "::1": rate limits are per address, not per port.
    package static func host(of address: String) -> String {
        if address.hasPrefix("["), let close = address.firstIndex(of: "]") { return String(address[address.index(after: address.startIndex)..<close]) }
        if let colon = address.lastIndex(of: ":") { return String(address[..<colon]) }
        return address
    }

    /// 401 unless the request carries the admin token `token` (compared in constant time).
    package static func checkAdmin(_ request: HTTPRequest, token expected: [UInt8]) -> HTTPResponse? {
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

    private static func readiness(_ status: any StatusView) -> HTTPResponse {
        let clock = ClockStatus.current()
        var ready = true
        var writer = JSONWriter()
        writer.beginObject()
        writer.key("apps"); writer.beginArray()
        for runtime in status.runningApps {
            // Each lane's pool (APNs', and FCM's with an `android` member): the app is ready while
            // any of them can send — an FCM outage must not take the iOS sender out of its load
            // balancer, nor the reverse. `connectionsUp` and `halted` stay APNs' (as before lanes).
            var lanes = [("apns", runtime.pool)]
            if let android = runtime.android { lanes.append(("fcm", android.pool)) }
            let laneReady = lanes.map { $0.1.connectionsUp > 0 && $0.1.haltMessage == nil }
            if !laneReady.contains(true) { ready = false }
            let up = runtime.pool.connectionsUp
            let halted = runtime.pool.haltMessage
            writer.beginObject()
            writer.key("app"); writer.string(runtime.name)
            writer.key("ready"); writer.bool(laneReady.contains(true))
            writer.key("connectionsUp"); writer.int(up)
            writer.key("halted"); if let halted { writer.string(halted) } else { writer.null() }
            writer.key("lanes"); writer.beginArray()
            for ((provider, pool), laneIsReady) in zip(lanes, laneReady) {
                writer.beginObject()
                writer.key("provider"); writer.string(provider)
                writer.key("ready"); writer.bool(laneIsReady)
                writer.key("connectionsUp"); writer.int(pool.connectionsUp)
                writer.key("halted"); if let message = pool.haltMessage { writer.string(message) } else { writer.null() }
                writer.endObject()
            }
            writer.endArray()
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
        let standby = status.isStandby
        if standby { ready = false }
        writer.key("standby"); writer.bool(standby)
        // Reported, not part of readiness: a node without Redis still sends from its own store.
        status.clusterReadiness(into: &writer)
        writer.key("ready"); writer.bool(ready)
        writer.endObject()
        return .json(status: ready ? 200 : 503, writer.bytes)
    }
}

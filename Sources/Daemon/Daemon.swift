// Daemon — `sokuho serve` put together: `Daemon` binds the HTTP API, then starts the `Service`, and
// stops them in the reverse order.
// - `Router` and its route files (installations, channels, events, promote, tokens).
// - `APIWorker`: the API's work off its thread (store, Redis and counts), a bounded queue, 503
//   `busy` when full.
// - `StatusPage`. This module is the only place HTTP status codes live.
// - `openapi.json` describes the API (SimulatorTests/OpenAPITests checks the server against it).

import DaemonConfiguration
import HTTPAPI
import Runtime

/// `sokuho serve` put together: the HTTP API (`Router` on an evhttp `HTTPServer`) in front of the
/// runtime (`Service`). The parts start and stop in order: the API's listeners are bound before
/// the runtime opens any connection to APNs (a daemon that cannot serve its API connects to
/// nothing), and the API stops answering before the runtime stops (no request reaches a runtime
/// that is shutting down).
public final class Daemon: Sendable {
    /// The store, the apps' warm pools, events, reload, standby: what the API calls into.
    public let runtime: Service
    private let server: HTTPServer
    private let router: Router
    /// The bound API ports, in the order of `configuration.listen` (port 0 becomes the picked one).
    public let ports: [Int]

    /// Binds the API, then starts the runtime; nothing is served until `start`.
    /// `log`: the daemon's log lines (`DaemonLog`; silent unless given).
    public init(configuration: ServeConfiguration, log: DaemonLog = .silent) throws(ServiceError) {
        router = Router()
        var limits = HTTPLimits()
        limits.maximumBodyBytes = configuration.maxBodyBytes
        do {
            server = try HTTPServer(listen: configuration.listen.map { ($0.host, $0.port) }, limits: limits) { [router = router] request in
                router.answer(request)
            }
        } catch {
            router.stopWorkers()
            throw ServiceError("listen: \(error)")
        }
        do { runtime = try Service(configuration: configuration, log: log) } catch {
            server.stop()
            router.stopWorkers()
            throw error
        }
        ports = server.ports
        router.service = runtime
        let server = self.server
        runtime.apiRefusals.withLock { $0 = { server.refusedForDescriptors } }
    }

    /// Starts answering the API, then the runtime's threads (credential checks, standby, cluster).
    public func start() {
        server.start()
        runtime.start()
    }

    /// SIGTERM: stops the API and its workers (a queued submission is recorded and queued, or not
    /// at all), then lets running events finish and closes the runtime.
    public func stop() {
        server.stop()
        router.stopWorkers()
        runtime.stop()
    }
}

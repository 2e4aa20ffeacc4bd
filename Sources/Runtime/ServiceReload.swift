import Cluster
import DaemonConfiguration
import IO

/// SIGHUP: the daemon takes a changed configuration without a restart, and without dropping the
/// warm connections that are still valid — the point of keeping them warm is that the next
/// earthquake does not pay for a reconnect, and an operator rotating one app's key must not make
/// every other app pay it.
///
/// - An app whose endpoints, CA file, pool sizes, keep-alive, ids and key (its public half) are
///   unchanged keeps its runtime and connections; it takes the new start budget.
/// - An app with any of those changed gets a new runtime (new connections, checked at once); its
///   queued events move to it, running ones finish on the old one, which is shut down after.
/// - New apps start; removed apps stop taking events and are shut down once their events finished.
/// - The admin token, the rate limit and the credential-check interval change at once.
/// - `listen`, `storePath`, `maxBodyBytes`, `statusPage` and `cluster` are bound at start: a change is
///   reported and takes effect at the next restart.
/// All of it or nothing: a configuration that fails to load or start an app changes nothing.
extension Service {
    public struct ReloadReport: Sendable {
        /// One line per app and setting that changed, for the log.
        public var lines: [String] = []
    }

    public func reload(_ new: ServeConfiguration) throws(ServiceError) -> ReloadReport {
        let old = configuration
        let token = try Self.readAdminToken(new.adminTokenFile)
        var report = ReloadReport()
        let current = apps.withLock { $0 }
        var next: [AppRuntime] = []
        var started: [AppRuntime] = []
        var replaced: [(old: AppRuntime, new: AppRuntime)] = []
        do {
            for app in new.apps {
                let existing = current.first { $0.app.bundleID == app.bundleID && $0.app.environment == app.environment }
                if let existing, existing.canKeep(app, configuration: new) {
                    existing.apply(new)
                    next.append(existing)
                    report.lines.append("\(existing.name): kept (its warm connections stay)")
                    continue
                }
                let runtime = try AppRuntime(app: app, configuration: new)
                started.append(runtime)
                next.append(runtime)
                if let existing {
                    replaced.append((existing, runtime))
                    report.lines.append("\(runtime.name): replaced (key, ids, endpoint, CA or pool changed): new connections")
                } else {
                    report.lines.append("\(runtime.name): added")
                }
            }
        } catch {
            for runtime in started { runtime.shutdown() }
            throw error
        }
        let gone = current.filter { runtime in !next.contains { $0 === runtime } }
        for runtime in gone where !replaced.contains(where: { $0.old === runtime }) {
            report.lines.append("\(runtime.name): removed (events already accepted for it still finish)")
        }

        // Committed from here: nothing below fails.
        apps.withLock { $0 = next }
        for (old, new) in replaced { events.move(from: old, to: new) }
        retired.withLock { $0 += gone }
        adminToken.withLock { $0 = token }
        if new.logFormat != old.logFormat {
            log.withLock { $0 = $0.with(format: new.logFormat) }
            report.lines.append("logFormat: changed")
        }
        if new.rateLimit != old.rateLimit {
            limiter.withLock { $0 = new.rateLimit.map { RateLimiter(perSecond: Double($0.perSecond), burst: $0.burst) } }
            report.lines.append("rateLimit: changed")
        }
        settings.withLock { settings in
            let listen = settings.listen, store = settings.storePath, body = settings.maxBodyBytes, page = settings.statusPage
            let cluster = settings.cluster
            settings = new
            // Bound at start: the running values stay until the next restart.
            settings.listen = listen; settings.storePath = store; settings.maxBodyBytes = body; settings.statusPage = page
            settings.cluster = cluster
        }
        for (name, changed) in [("listen", new.listen != old.listen), ("storePath", new.storePath != old.storePath),
                                ("maxBodyBytes", new.maxBodyBytes != old.maxBodyBytes), ("statusPage", new.statusPage != old.statusPage),
                                ("cluster", new.cluster != old.cluster)]
        where changed {
            report.lines.append("\(name): changed in the configuration; takes effect at the next restart")
        }
        if new.credentialCheckInterval != old.credentialCheckInterval {
            startCredentialChecks(every: new.credentialCheckInterval)
        } else {
            // New keys are checked now, not at the next round up to an hour away.
            let log = logger
            for runtime in started { OSThread.startDetached(name: "sokuho-creds") { _ = CredentialCheck.run(runtime, log: log) } }
        }
        shutDownIdleRetired()
        return report
    }

    /// Shuts down the retired runtimes no queued or running event needs any more.
    package func shutDownIdleRetired() {
        let idle = retired.withLock { retired -> [AppRuntime] in
            let idle = retired.filter { !events.uses($0) }
            retired.removeAll { runtime in idle.contains { $0 === runtime } }
            return idle
        }
        for runtime in idle { runtime.shutdown() }
    }
}

#if canImport(Glibc)
import Cluster
import DaemonConfiguration
import Glibc
#endif
import APNs
import Crypto
import Fanout
import IO
import JSONCore
import Sender
import Synchronization
import TokenStore
import Vocabulary

/// `sokuho serve` at run time: the token store, one warm pool per configured app, the event queue,
/// the credential checks, standby and the cluster's side. Nothing about HTTP: the daemon's API
/// (module Daemon) calls in; what it counts is in `ServiceMetrics`.
public final class Service: Sendable {
    /// The open token store; a standby swaps it for each shipped backup (`Service+Standby.swift`).
    package var store: TokenStore { stores.current }
    package let stores: StoreHolder
    /// True while a standby: nothing is sent, events and registrations answer 503 `standby`.
    package let standby: Atomic<Bool>
    package let follower: Lock<PeriodicThread?> = Lock(nil)
    /// The last shipped backup looked at (applied or refused), so an unchanged file is not copied again.
    package let followedBackup: Lock<BackupStamp?> = Lock(nil)
    /// Wall-clock seconds when a shipped backup was last applied (0: never).
    package let backupAppliedAt = Atomic<Int>(0)
    /// The daemon's log (`DaemonLog`): events, backups, credential checks, pools, the cluster;
    /// `sokuho serve` sets stderr, anything else leaves it silent.
    package let log: Lock<DaemonLog>
    package let apps: Lock<[AppRuntime]>
    package let events: EventQueue
    package let metrics = ServiceMetrics()
    package let adminToken: Lock<[UInt8]>
    /// The configuration in force: the start's, then each SIGHUP's that loaded (`reload`).
    package let settings: Lock<ServeConfiguration>
    package let limiter: Lock<RateLimiter?>
    /// Runtimes a reload replaced or removed, shut down once no event needs them.
    package let retired = Lock<[AppRuntime]>([])
    package var configuration: ServeConfiguration { settings.withLock { $0 } }
    package var rateLimiter: RateLimiter? { limiter.withLock { $0 } }
    /// What the API counts that the metrics show (set by the daemon that serves it).
    package let apiRefusals = Lock<@Sendable () -> Int>({ 0 })
    package let credentialChecker: Lock<PeriodicThread?> = Lock(nil)
    /// Looks at the pools every few seconds and logs a halt or a loss of every connection (`PoolWatch`).
    package let poolWatch: Lock<PeriodicThread?> = Lock(nil)
    /// Installation ids whose first registration is being written (see `Router.register`).
    package let registering = Lock<Set<String>>([])
    /// This node of a cluster, or nil without a `cluster` section (`ClusterNode`).
    package let cluster: ClusterNode?
    /// The threads sending this node's share of the cluster's events (not while a standby).
    package let shardWorkers = Lock<ShardWorkers?>(nil)
    /// Registration replication between the cluster's nodes (`ClusterReplication.swift`), nil without a cluster.
    package let replication: RegistrationReplication?
    /// Token counts for `/v1/tokens/stats`, `/metrics` and the status page.
    package let tokenStatistics = TokenStatisticsCache()

    /// Opens the store, starts the warm pools and re-queues what a previous run accepted but did
    /// not finish (nothing runs until `start`). The daemon binds its API before, so one that cannot
    /// serve it opens no connection to APNs. `log` is given here, so the events a restart resumes are logged too.
    public init(configuration: ServeConfiguration, log: DaemonLog = .silent) throws(ServiceError) {
        self.log = Lock(log)
        settings = Lock(configuration)
        let store: TokenStore
        do { store = try TokenStore(directory: configuration.storePath) } catch {
            throw ServiceError("storePath \(configuration.storePath): \(error.description)")
        }
        stores = StoreHolder(store)
        standby = Atomic(configuration.standby)
        adminToken = Lock(try Self.readAdminToken(configuration.adminTokenFile))
        cluster = try configuration.cluster.map { (settings) throws(ServiceError) in try ClusterNode(settings) }
        let stores = self.stores
        do { replication = try cluster.map { (node) throws(StoreError) in try RegistrationReplication(node: node, stores: stores) } } catch {
            store.close()
            throw ServiceError("storePath \(configuration.storePath): \(error.description)")
        }
        limiter = Lock(configuration.rateLimit.map { RateLimiter(perSecond: Double($0.perSecond), burst: $0.burst) })
        var runtimes: [AppRuntime] = []
        do {
            for app in configuration.apps { runtimes.append(try AppRuntime(app: app, configuration: configuration)) }
        } catch {
            for runtime in runtimes { runtime.shutdown() }
            store.close()
            throw error
        }
        apps = Lock(runtimes)
        // Read before the workers start: a failure here leaves no thread behind.
        let pending: [EventSerialRecord], ended: [EventSerialRecord]
        do {
            pending = try store.eventSerials(in: .sending)
            ended = try store.eventSerials(in: .done) + store.eventSerials(in: .stopped)
        } catch {
            for runtime in runtimes { runtime.shutdown() }
            store.close()
            throw ServiceError("storePath: \(error.description)")
        }
        let metrics = self.metrics
        let retiring = RetiredRuntimes()
        events = EventQueue(stores: stores) { entry, result in
            metrics.eventFinished(entry, result)
            retiring.service?.logEnded(entry)
            retiring.service?.shutDownIdleRetired()
        }
        retiring.service = self
        // The list (`GET /v1/events`, the status page) shows what ended before a restart too.
        events.remember(Self.listed(ended).compactMap { record in
            guard let event = try? FanoutEvent(json: record.body), let runtime = app(event.app, event.environment) else { return nil }
            return (event, runtime, record.phase == .done ? .done : .stopped, FanoutReport(json: record.report), Int64(record.startedAt / 1000))
        })
        // A standby runs nothing: what its store holds in `.sending` is the primary's business
        // until a promotion (`promote`) resumes it.
        if !configuration.standby { resume(pending) }
    }

    /// The ended events a restart lists: this node's own (not a cluster shard's record, not what
    /// it remembers of offering an event to the cluster), the newest `EventQueue.kept`, oldest first.
    private static func listed(_ records: [EventSerialRecord]) -> [EventSerialRecord] {
        let own = records.filter { ShardRecordKey.eventKey(of: $0.eventKey) == nil && !AcceptanceRecordKey.isAcceptance($0.eventKey) }
        return Array(own.sorted { $0.updatedAt < $1.updatedAt }.suffix(EventQueue.kept))
    }

    /// Starts answering the API and checking the apps' credentials (at once, then every
    /// `credentialCheckInterval`).
    public func start() {
        startCredentialChecks(every: configuration.credentialCheckInterval)
        startFollowingBackup()
        // Before any thread of the cluster connects: its first INFO persistence is told.
        cluster?.health.log.withLock { $0 = { [weak self] level, line in self?.logger.log(level, line) } }
        replication?.start { [weak self] level, line in self?.logger.log(level, line) }
        if !isStandby { startShardWorkers() }
        startPoolWatch()
    }

    /// Starts taking the cluster's shards (nothing without a `cluster` section).
    package func startShardWorkers() {
        guard let cluster else { return }
        shardWorkers.withLock { workers in if workers == nil { workers = ShardWorkers(service: self, cluster: cluster) } }
    }

    /// (Re)starts the credential checks: every app at once, then every `interval`.
    package func startCredentialChecks(every interval: Duration) {
        credentialChecker.stopThread()
        let fresh = CredentialChecker.start(interval: interval, log: { [weak self] in self?.logger ?? .silent }) { [weak self] in self?.apps.withLock { $0 } ?? [] }
        credentialChecker.withLock { $0 = fresh }
    }

    /// SIGTERM: stops the API, lets running events finish (their checkpoints are stored either
    /// way; queued ones are resumed by the next start), closes the pools and the store.
    public func stop() {
        credentialChecker.stopThread()
        poolWatch.stopThread()
        follower.stopThread()
        shardWorkers.withLock { workers -> ShardWorkers? in defer { workers = nil }; return workers }?.stop()
        events.stop()
        replication?.stop() // after the events: what they wrote last stays in the outbox for the next start
        for runtime in apps.withLock({ $0 }) + retired.withLock({ $0 }) { runtime.shutdown() }
        store.close()
    }

    /// API connections answered 503 for want of a descriptor (`AcceptGuard`).
    package var apiRefusedForDescriptors: Int { apiRefusals.withLock { $0 }() }

    /// The admin bearer token: the file's content without surrounding white space.
    package static func readAdminToken(_ path: String) throws(ServiceError) -> [UInt8] {
        let token: [UInt8]
        do { token = try SecretFile.read(path) } catch { throw ServiceError("adminTokenFile \(path): \(error.message)") }
        guard token.count >= 16 else {
            throw ServiceError("adminTokenFile \(path): the token is \(token.count) characters; use at least 16 random ones (e.g. openssl rand -hex 32)")
        }
        return token
    }

    /// The daemon's log as it is now (a reload may change its format).
    package var logger: DaemonLog { log.withLock { $0 } }

    /// The runtime of an event's app, if this daemon serves it.
    package func app(_ bundle: BundleID, _ environment: Environment) -> AppRuntime? {
        apps.withLock { $0.first { $0.app.bundleID == bundle && $0.app.environment == environment } }
    }

    /// Events accepted by an earlier run but not finished (a crash, a restart): queued again, so
    /// a 202 is never lost. Their deadline still runs from when they were accepted. A cluster
    /// shard's records are not: its shard is still pending in the cluster, and resumes from there;
    /// nor is what this node remembers of offering an event to the cluster (`ClusterAcceptances`).
    package func resume(_ pending: [EventSerialRecord]) {
        for record in pending where ShardRecordKey.eventKey(of: record.eventKey) == nil && !AcceptanceRecordKey.isAcceptance(record.eventKey) {
            guard let event = try? FanoutEvent(json: record.body), let runtime = app(event.app, event.environment) else { continue }
            _ = events.submit(event, app: runtime)
            logger.info("event resumed", Self.eventFields(event) + [("app", .text(runtime.name))])
        }
    }

    // MARK: Events

    /// What submitting an event came to.
    package enum Submission {
        /// `warnings`: what one provider cannot carry while the others send as usual
        /// (`Fanout.checkPayloads`), said in the 202 as the report will say it.
        case accepted(EventQueue.Entry, warnings: [String])
        /// Queued as shards for the cluster's nodes (`ClusterEvents`).
        case acceptedByCluster(id: String, warnings: [String])
        case alreadySent(FanoutReport)
        case refused(Refusal, message: String)
    }

    /// Why an event was refused, in the runtime's terms (the API gives each its HTTP status).
    package enum Refusal: Sendable {
        case standby, invalidEvent, unknownApp, superseded, conflict, clusterUnavailable, storeUnavailable
        /// The cluster accepted this serial and its Redis has lost it since (`ClusterAcceptances`).
        case lost

        /// The stable `error.code` of the API's answer (README, openapi.json).
        package var code: String {
            switch self {
            case .standby: "standby"
            case .invalidEvent: "invalid_event"
            case .unknownApp: "unknown_app"
            case .superseded: "serial_superseded"
            case .conflict: "serial_conflict"
            case .clusterUnavailable: "cluster_unavailable"
            case .storeUnavailable: "store_unavailable"
            case .lost: "event_lost"
            }
        }
    }

    /// Validates, checks key and serial against what was sent, records and queues an event.
    package func submit(_ body: [UInt8]) -> Submission {
        if isStandby { return .refused(.standby, message: Self.standbyMessage) }
        let event: FanoutEvent
        do { event = try FanoutEvent(json: body) } catch {
            return .refused(.invalidEvent, message: error.description)
        }
        guard let runtime = app(event.app, event.environment) else {
            return .refused(.unknownApp, message: "app: \(event.app.text) in \(event.environment.rawValue) is not configured on this daemon")
        }
        let warnings: [String]
        do { warnings = try Fanout.checkPayloads(event, android: runtime.fanout.android) } catch {
            return .refused(.invalidEvent, message: error.message)
        }
        let hash = SHA256.hash(event.canonicalJSON)
        do {
            let records = try store.eventRecords(eventKey: event.key)
            // In a cluster an event is the cluster's, unless this node ran it alone (Redis was down).
            if let cluster, records.serials.isEmpty {
                if let answer = submitToCluster(event, bodyHash: hash, cluster: cluster, warnings: warnings) { return answer }
                cluster.counters.ranAlone.add(1, ordering: .relaxed)
                logger.warning("cluster: Redis unreachable (\(cluster.health.problem ?? "no answer")); event '\(event.key)' serial \(event.serial) runs on this node alone")
            }
            switch EventAdmission(serial: event.serial, bodyHash: hash).decision(given: records.serials) {
            case let .superseded(by: newer):
                return .refused(.superseded, message: "serial: \(event.serial) is older than serial \(newer) of '\(event.key)', already accepted; send a higher serial")
            case .conflict:
                return .refused(.conflict, message: "serial: \(event.serial) of '\(event.key)' was already accepted with a different body; give new content a higher serial")
            case let .alreadySent(same):
                if let report = FanoutReport(json: same.report) { return .alreadySent(report) }
            case .resume:
                break
            case .new:
                let now = WallClock.milliseconds()
                try store.write([.putEventSerial(EventSerialRecord(eventKey: event.key, serial: event.serial, bodyHash: hash, phase: .sending,
                                                                   startedAt: now, updatedAt: now, body: event.canonicalJSON))])
            }
        } catch {
            return .refused(.storeUnavailable, message: error.description)
        }
        let entry = events.submit(event, app: runtime)
        logger.info("event accepted", Self.eventFields(event) + [("app", .text(runtime.name))])
        return .accepted(entry, warnings: warnings)
    }
}

/// The event queue's way back to its service (the queue is made before `self` is complete).
private final class RetiredRuntimes: @unchecked Sendable {
    // @unchecked: set once in `Service.init`, before the first event can finish; read afterwards.
    package weak var service: Service?
}

extension Service {
    /// Starts looking at the pools every 5 s (`PoolWatch`).
    package func startPoolWatch() {
        let watch = PoolWatch()
        let fresh = PeriodicThread(name: "sokuho-poolwatch", interval: .seconds(5)) { [weak self] _ in
            guard let self else { return }
            watch.look(apps.withLock { $0 }, log: logger)
        }
        poolWatch.withLock { $0 = fresh }
    }
}

import DaemonConfiguration
import Redis
import IO
import Synchronization
import Vocabulary

/// Whether this node reaches the cluster's Redis: what `/readyz`, `/metrics` and the status page
/// say. Every link reports each success and failure here; one working link is not proof the others
/// work, so the last report wins (a failure is reported until some command succeeds again).
package final class ClusterHealth: Sendable {
    private let state = Lock<(connected: Bool, error: String?)>((false, "not connected yet"))
    /// Commands sent to Redis by this node (every link), for `/metrics` and the benchmark.
    package let commands = Atomic<Int>(0)
    /// What `INFO persistence` said at the last (re)connect of any link; nil until one connected.
    private let persistenceSeen = Lock<RedisPersistence?>(nil)
    /// Where a change of persistence is told (stderr under `sokuho serve`; set by the service).
    package let log = Lock<@Sendable (LogLevel, String) -> Void>({ _, _ in })

    /// What the cluster's Redis said about its persistence (nil: not connected yet).
    package init() {}

    package var persistence: RedisPersistence? { persistenceSeen.withLock { $0 } }

    /// The warning an operator must see while the cluster's Redis keeps no append-only file.
    package var persistenceProblem: String? {
        guard let persistence, !persistence.appendOnly else { return nil }
        return "the cluster's Redis keeps no append-only file (INFO persistence: aof_enabled:0): if it restarts, events queued or being sent "
            + "are lost (their phones are not sent to) and their GET answers state 'lost'; set 'appendonly yes' (README, Cluster)"
    }

    /// Records what a link read after connecting; a change is logged once, not per link.
    package func observed(_ persistence: RedisPersistence) {
        let previous = persistenceSeen.withLock { seen in defer { seen = persistence }; return seen }
        guard previous?.appendOnly != persistence.appendOnly else { return }
        let line = persistenceProblem.map { "cluster: warning: " + $0 } ?? "cluster: the cluster's Redis keeps an append-only file (aof_enabled:1)"
        log.withLock { $0 }(persistenceProblem == nil ? .info : .warning, line)
    }

    package var connected: Bool { state.withLock { $0.connected } }
    /// The last failure, while disconnected.
    package var problem: String? { state.withLock { $0.connected ? nil : $0.error } }

    package func succeeded() {
        state.withLock { $0 = (true, nil) }
    }

    package func failed(_ error: RedisError) {
        state.withLock { $0 = (false, error.description) }
    }
}

/// One thread's connection to the cluster's Redis (hiredis is blocking, so each cluster thread has
/// its own): connects on first use, and after a failure reconnects no sooner than its back-off
/// (100 ms, doubling to 5 s) so a Redis that is down costs one connect attempt per back-off, not
/// one per command — unless another link has reached Redis since: then Redis is back, and waiting
/// out this link's back-off would only answer "unreachable" (a GET of a finished event answered
/// 503 for up to 5 s after `/readyz` and the metrics said the node was connected again).
package final class ClusterLink: @unchecked Sendable {
    // @unchecked: one thread at a time uses a link — the thread it was made for, or whoever
    // holds the Lock it lives in (`ClusterNode.apiLink`, `ShardLease`).
    package let endpoint: RedisEndpoint
    package let health: ClusterHealth
    private var connection: RedisConnection?
    private var backoff: Duration = .milliseconds(100)
    private var retryAt = MonotonicInstant.now()

    package init(endpoint: RedisEndpoint, health: ClusterHealth) {
        self.endpoint = endpoint
        self.health = health
    }

    /// Runs `body` on a working connection. Throws the connection's error (or the last connect
    /// failure while backing off); a server error reply is `body`'s to handle.
    package func run<T>(_ body: (RedisConnection) throws(RedisError) -> T) throws(RedisError) -> T {
        let connection = try connected()
        do {
            let result = try body(connection)
            health.commands.add(1, ordering: .relaxed)
            health.succeeded()
            backoff = .milliseconds(100)
            return result
        } catch {
            health.commands.add(1, ordering: .relaxed)
            if error.needsReconnect {
                health.failed(error)
                retryAt = MonotonicInstant.now()  // a lost connection is re-made at once, once
            } else {
                health.succeeded()  // the server answered: it is reachable
            }
            throw error
        }
    }

    private func connected() throws(RedisError) -> RedisConnection {
        if let connection, connection.isConnected { return connection }
        guard MonotonicInstant.now() >= retryAt || health.connected else {
            throw RedisError.connectFailed(endpoint: endpoint.description, message: health.problem ?? "backing off")
        }
        do {
            if let connection { try connection.reconnect() } else { connection = try RedisConnection(endpoint) }
            // At every (re)connect: a Redis restarted with other settings says so here.
            if let persistence = try? connection!.persistence() { health.observed(persistence) }
            return connection!
        } catch {
            health.failed(error)
            retryAt = MonotonicInstant.now() + backoff
            backoff = min(backoff * 2, .seconds(5))
            throw error
        }
    }
}

import DaemonConfiguration
import Redis
import IO
import Synchronization
import Vocabulary

/// This daemon as one node of a cluster (`cluster` in the configuration): its Redis endpoint, its
/// health, and the threads that share registrations and events with the other nodes. Nil in a
/// `Service` without a `cluster` section: then nothing here runs and nothing connects.
///
/// Redis is never on a push's path: the fan-out reads the local LMDB store, and a node that loses
/// Redis keeps sending what it has (events submitted to it run locally, unsharded) and says it is
/// degraded on `/readyz` and `/metrics`.
package final class ClusterNode: Sendable {
    package let settings: ServeConfiguration.Cluster
    package let endpoint: RedisEndpoint
    package let health = ClusterHealth()
    package let counters = ClusterCounters()
    package var node: String { settings.node }

    package init(_ settings: ServeConfiguration.Cluster) throws(ServiceError) {
        self.settings = settings
        // One second each: a lease is extended every third of `claimAfter` (≥ 2 s), and an API
        // request waits for a submission.
        var endpoint = RedisEndpoint(host: settings.redis.host, port: settings.redis.port, connectTimeout: .seconds(1), commandTimeout: .seconds(1))
        if let file = settings.passwordFile {
            do { endpoint.password = String(decoding: try SecretFile.read(file), as: UTF8.self) } catch {
                throw ServiceError("cluster.passwordFile \(file): \(error.message)")
            }
        }
        self.endpoint = endpoint
        apiLink = Lock(ClusterLink(endpoint: endpoint, health: health))
    }

    /// The API thread's link: submitting events, reading their ledger (at most `commandTimeout`
    /// each, so a hung Redis stalls the API for a second, not forever).
    package let apiLink: Lock<ClusterLink>

    /// Runs `body` on the API thread's link.
    package func api<T: Sendable>(_ body: (RedisConnection) throws(RedisError) -> T) throws(RedisError) -> T {
        try apiLink.withLock { link throws(RedisError) -> T in try link.run(body) }
    }

    /// Runs a read on the API thread's link, once more on a fresh connection when the first try
    /// found it broken: a Redis that restarted since the last command breaks the kept connection,
    /// and that must not make a GET say an event does not exist.
    package func read<T: Sendable>(_ body: (RedisConnection) throws(RedisError) -> T) throws(RedisError) -> T {
        do { return try api(body) } catch {
            guard case .connectionLost = error else { throw error }
            return try api(body)
        }
    }

    /// A new link for a thread that talks to Redis.
    package func link() -> ClusterLink { ClusterLink(endpoint: endpoint, health: health) }
}

/// What this node's share of the cluster's events came to, for `/metrics`.
package final class ClusterCounters: Sendable {
    /// Shards this node sent to the end and reported.
    package let shardsDone = Atomic<Int>(0)
    /// Shards this node took over from another (XAUTOCLAIM after `claimAfter`).
    package let takenOver = Atomic<Int>(0)
    /// Shards this node stopped sending because its lease was gone.
    package let abandoned = Atomic<Int>(0)
    /// Stream entries that were not shards (skipped, acknowledged).
    package let badEntries = Atomic<Int>(0)
    /// Events accepted while Redis was unreachable: run by this node alone.
    package let ranAlone = Atomic<Int>(0)
    /// Events this node offered that Redis accepted and then lost while they could be sending.
    package let eventsLost = Atomic<Int>(0)
    /// Their ids (key/serial), so each is counted and logged once.
    package let lostEvents = Lock<Set<String>>([])
}

import Cluster
import IO
import Synchronization

/// This daemon as one node of a cluster (`cluster` in the configuration): its Redis endpoint, its
/// health, and the threads that share registrations and events with the other nodes. Nil in a
/// `Service` without a `cluster` section: then nothing here runs and nothing connects.
///
/// Redis is never on a push's path: the fan-out reads the local LMDB store, and a node that loses
/// Redis keeps sending what it has (events submitted to it run locally, unsharded) and says it is
/// degraded on `/readyz` and `/metrics`.
final class ClusterNode: Sendable {
    let settings: ServeConfiguration.Cluster
    let endpoint: RedisEndpoint
    let health = ClusterHealth()
    var node: String { settings.node }

    init(_ settings: ServeConfiguration.Cluster) throws(ServiceError) {
        self.settings = settings
        var endpoint = RedisEndpoint(host: settings.redis.host, port: settings.redis.port)
        if let file = settings.passwordFile {
            do { endpoint.password = String(decoding: try Service.readSecretFile(file), as: UTF8.self) } catch {
                throw ServiceError("cluster.passwordFile \(file): \(error.message)")
            }
        }
        self.endpoint = endpoint
    }

    /// A new link for a thread that talks to Redis.
    func link() -> ClusterLink { ClusterLink(endpoint: endpoint, health: health) }
}

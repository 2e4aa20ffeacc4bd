import APNs
import Cluster
import DaemonConfiguration
import IO
import Redis
import RedisTestSupport
import Testing

/// The keeper that extends a shard's lease while this node sends the shard.
@Suite(.serialized) struct ShardLeaseTests {
    @Test("A shard's lease keeper dropped without stop stops extending the lease: it expires and another node takes it")
    func droppedKeeper() throws {
        let server = try RedisServerFixture()
        defer { server.stop() } // also keeps the server alive to the end: ARC may end it after its last use
        let redis = try server.connect()
        let duration = Duration.seconds(3)
        var settings = ServeConfiguration.Cluster(redis: Endpoint(host: "127.0.0.1", port: server.port), node: "a")
        settings.claimAfter = duration
        let cluster = try ClusterNode(settings)
        let lease = try #require(try redis.acquireLease("keyshard:k/0/1", holder: "a serial 1", for: duration))
        // The shard's entry, delivered to this node: the keeper re-claims it every round.
        _ = try redis.createGroup(ClusterKeys.eventGroup, on: ClusterKeys.events, startingAt: "0")
        let entry = try redis.add(to: ClusterKeys.events, [StreamEntry.Field("key", Array("k".utf8))])
        #expect(try redis.readGroup(ClusterKeys.eventGroup, as: "a", from: ClusterKeys.events, count: 1).map(\.id) == [entry])
        var keeper: ShardLease? = ShardLease(lease, entry: entry, duration: duration, cluster: cluster)

        // Kept: past its duration the lease is still a's (else the rest proves nothing).
        sleep(milliseconds: 4_500)
        #expect(try redis.acquireLease("keyshard:k/0/1", holder: "b serial 2", for: duration) == nil, "the keeper did not extend the lease")
        #expect(keeper?.lostReason == nil)

        // Dropped without `stop` (a Redis call threw past the shard worker's `stop` before issue
        // 37's fix): its thread read the freed keeper at the next round and aborted the daemon.
        keeper = nil
        let deadline = MonotonicInstant.now() + duration * 4
        var taken: Lease?
        while taken == nil, MonotonicInstant.now() < deadline {
            taken = try redis.acquireLease("keyshard:k/0/1", holder: "b serial 2", for: duration)
            if taken == nil { sleep(milliseconds: 100) }
        }
        #expect(taken != nil, "the dropped keeper went on extending the lease")
    }
}

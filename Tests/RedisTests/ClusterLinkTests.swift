import Cluster
import Redis
import RedisTestSupport
import Testing

@Suite(.serialized) struct ClusterLinkTests {
    /// The API link backs off while Redis is down (up to 5 s between connect attempts); the node's
    /// other links reach Redis first when it is back. What the API answers then must be Redis's
    /// answer, not "unreachable" until its own back-off ends.
    @Test("A link backing off reconnects at once when another link of the node has reached Redis again")
    func aLinkBackingOffFollowsTheNodesOtherLinks() throws {
        let redis = try RedisServerFixture()
        let health = ClusterHealth()
        let api = ClusterLink(endpoint: redis.endpoint(connectTimeout: .seconds(1), commandTimeout: .seconds(1)), health: health)
        let background = ClusterLink(endpoint: api.endpoint, health: health)
        try api.run { connection throws(RedisError) in try connection.ping() }
        redis.stop()

        // 1.6 s of commands: connect attempts at 0, 0.1, 0.3, 0.7 and 1.5 s, the next one 1.6 s later.
        let until = now() + 1.6
        while now() < until {
            #expect(throws: RedisError.self) { try api.run { connection throws(RedisError) in try connection.ping() } }
            sleep(milliseconds: 20)
        }
        #expect(throws: RedisError.self, "still backing off while Redis is down") {
            try api.run { connection throws(RedisError) in try connection.ping() }
        }

        try redis.start()
        try background.run { connection throws(RedisError) in try connection.ping() }
        #expect(health.connected)
        // Within its back-off, yet it reconnects: the other link proved Redis reachable.
        #expect(throws: Never.self) { try api.run { connection throws(RedisError) in try connection.ping() } }
    }
}

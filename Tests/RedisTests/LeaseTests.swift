import Redis
import RedisTestSupport
import Testing

@Suite(.serialized) struct LeaseTests {
    @Test("A lease has one holder at a time, and its fencing token grows with every acquisition", arguments: RedisServerFixture.Server.allCases)
    func oneHolder(_ kind: RedisServerFixture.Server) throws {
        let server = try RedisServerFixture(kind)
        defer { server.stop() } // also keeps the server alive to the end: ARC may end it after its last use
        let nodeA = try server.connect()
        let nodeB = try server.connect()

        let first = try #require(try nodeA.acquireLease("prune", holder: "a", for: .seconds(10)))
        #expect(first.key == "sokuho:lease:prune")
        #expect(try nodeB.acquireLease("prune", holder: "b", for: .seconds(10)) == nil)
        #expect(try nodeA.acquireLease("prune", holder: "a", for: .seconds(10)) == nil, "a holder extends, it does not acquire again")
        #expect(try nodeB.currentLease("prune") == first)
        #expect(try nodeB.acquireLease("other", holder: "b", for: .seconds(10)) != nil, "leases are independent")

        #expect(try nodeA.extendLease(first, for: .seconds(10)))
        #expect(try nodeA.releaseLease(first))
        #expect(try nodeA.currentLease("prune") == nil)
        let second = try #require(try nodeB.acquireLease("prune", holder: "b", for: .seconds(10)))
        #expect(second.token > first.token)
        #expect(try nodeA.extendLease(first, for: .seconds(10)) == false, "a released lease cannot be extended")
        #expect(try nodeA.releaseLease(first) == false, "nor released again: b holds it")
        #expect(try nodeA.currentLease("prune") == second)
    }

    @Test("An expired lease goes to another node, and the old holder's extend and release fail", arguments: RedisServerFixture.Server.allCases)
    func expiry(_ kind: RedisServerFixture.Server) throws {
        let server = try RedisServerFixture(kind)
        defer { server.stop() } // also keeps the server alive to the end: ARC may end it after its last use
        let nodeA = try server.connect()
        let nodeB = try server.connect()

        let old = try #require(try nodeA.acquireLease("shard-0", holder: "a", for: .milliseconds(600)))
        #expect(try nodeB.acquireLease("shard-0", holder: "b", for: .seconds(10)) == nil)
        sleep(milliseconds: 800)
        let new = try #require(try nodeB.acquireLease("shard-0", holder: "b", for: .seconds(10)))
        #expect(new.token > old.token)
        #expect(try nodeA.extendLease(old, for: .seconds(10)) == false)
        #expect(try nodeA.releaseLease(old) == false)
        #expect(try nodeA.currentLease("shard-0") == new, "the failed calls left b's lease alone")

        // The same holder name with an old token is not the holder either (a restarted node).
        let stale = Lease(name: "shard-0", holder: "b", token: new.token - 1)
        #expect(try nodeA.extendLease(stale, for: .seconds(10)) == false)
        #expect(try nodeB.extendLease(new, for: .seconds(10)))
    }

    @Test("SET NX PX sets a key only when absent, and it expires", arguments: RedisServerFixture.Server.allCases)
    func setIfAbsent(_ kind: RedisServerFixture.Server) throws {
        let server = try RedisServerFixture(kind)
        defer { server.stop() } // also keeps the server alive to the end: ARC may end it after its last use
        let redis = try server.connect()
        #expect(try redis.set("k", Array("one".utf8), onlyIfAbsent: true, expiresAfter: .milliseconds(600)))
        #expect(try redis.set("k", Array("two".utf8), onlyIfAbsent: true) == false)
        #expect(try redis.get("k") == Array("one".utf8))
        sleep(milliseconds: 800)
        #expect(try redis.get("k") == nil)
        #expect(try redis.increment("counter") == 1)
        #expect(try redis.increment("counter") == 2)
        #expect(try redis.delete(["counter", "k"]) == 1)
    }
}

import Redis
import RedisTestSupport
import Testing

/// The cluster's event ledger against a real redis-server: dedup by key and serial across nodes,
/// one stream entry per shard, and fencing of a shard's owner, report and checkpoints.
@Suite(.serialized) struct EventLedgerTests {
    static let body = Array(#"{"key":"eew-1"}"#.utf8)
    static let hash = Array(repeating: UInt8(7), count: 32)

    @Test("An event is accepted once across nodes: the same body again is 'same', another body a conflict, an older serial superseded", arguments: RedisServerFixture.Server.allCases)
    func dedupAcrossNodes(_ kind: RedisServerFixture.Server) throws {
        let server = try RedisServerFixture(kind)
        defer { server.stop() }
        let nodeA = try server.connect()
        let nodeB = try server.connect()

        #expect(try nodeA.acceptEvent(key: "eew-1", serial: 2, bodyHash: Self.hash, body: Self.body, shards: 4, node: "a", now: 1) == .new)
        #expect(try nodeB.acceptEvent(key: "eew-1", serial: 2, bodyHash: Self.hash, body: Self.body, shards: 4, node: "b", now: 2) == .same)
        #expect(try nodeB.acceptEvent(key: "eew-1", serial: 2, bodyHash: [1], body: Self.body, shards: 4, node: "b", now: 2) == .conflict)
        #expect(try nodeB.acceptEvent(key: "eew-1", serial: 1, bodyHash: Self.hash, body: Self.body, shards: 4, node: "b", now: 2) == .superseded(by: 2))
        #expect(try nodeB.acceptEvent(key: "eew-1", serial: 3, bodyHash: Self.hash, body: Self.body, shards: 4, node: "b", now: 3) == .new)
        // Only the two new serials queued shards: four each, nothing for the repeats.
        #expect(try nodeA.length(of: ClusterKeys.events) == 8)
        let entries = try nodeA.range(of: ClusterKeys.events)
        #expect(entries.map { $0.text("shard") } == ["0", "1", "2", "3", "0", "1", "2", "3"])
        #expect(entries.map { $0.text("serial") } == ["2", "2", "2", "2", "3", "3", "3", "3"])

        let ledger = try #require(try nodeB.eventLedger(key: "eew-1", serial: 2))
        #expect(ledger.shards.count == 4 && ledger.acceptedBy == "a" && !ledger.isDone)
        #expect(try nodeB.eventBody(key: "eew-1", serial: 2) == Self.body)
        #expect(try nodeB.eventLedger(key: "eew-1", serial: 9) == nil)
    }

    @Test("A shard's owner, report and checkpoints take only the highest fencing token: a holder that was taken over writes nothing; a checkpoint says when a later serial was accepted", arguments: RedisServerFixture.Server.allCases)
    func fencing(_ kind: RedisServerFixture.Server) throws {
        let server = try RedisServerFixture(kind)
        defer { server.stop() }
        let old = try server.connect()
        let new = try server.connect()
        _ = try old.acceptEvent(key: "k", serial: 1, bodyHash: Self.hash, body: Self.body, shards: 2, node: "a", now: 1)

        #expect(try old.claimShard(key: "k", serial: 1, shard: 0, node: "a", fence: 5))
        #expect(try old.saveShardProgress(key: "k", serial: 1, shard: 0, count: 2, fence: 5, topic: "region:0", record: [1]) == .saved)
        #expect(try new.claimShard(key: "k", serial: 1, shard: 0, node: "b", fence: 6))
        // The old holder, back from a pause: refused everywhere.
        #expect(try old.saveShardProgress(key: "k", serial: 1, shard: 0, count: 2, fence: 5, topic: "region:0", record: [2]) == .refused)
        #expect(try old.finishShard(key: "k", serial: 1, shard: 0, fence: 5, report: [9]) == false)
        #expect(try old.claimShard(key: "k", serial: 1, shard: 0, node: "a", fence: 5) == false)
        #expect(try new.shardProgress(key: "k", shard: 0, count: 2).map(\.record) == [[1]])

        #expect(try new.saveShardProgress(key: "k", serial: 1, shard: 0, count: 2, fence: 6, topic: "region:0", record: [3]) == .saved)
        #expect(try new.newerSerial(key: "k", than: 1) == nil)
        // A later serial accepted meanwhile: the checkpoint is recorded, and says so.
        _ = try old.acceptEvent(key: "k", serial: 2, bodyHash: Self.hash, body: Self.body, shards: 2, node: "a", now: 2)
        #expect(try new.saveShardProgress(key: "k", serial: 1, shard: 0, count: 2, fence: 6, topic: "region:0", record: [3]) == .superseded(by: 2))
        #expect(try new.newerSerial(key: "k", than: 1) == 2 && new.newerSerial(key: "k", than: 2) == nil)
        #expect(try new.finishShard(key: "k", serial: 1, shard: 0, fence: 6, report: Array("{}".utf8)))
        #expect(try new.claimShard(key: "k", serial: 1, shard: 0, node: "c", fence: 7) == false, "a finished shard is not claimed again")
        let ledger = try #require(try new.eventLedger(key: "k", serial: 1))
        #expect(ledger.shards[0] == EventLedgerEntry.Shard(owner: "b", fence: 6, report: Array("{}".utf8)))
        #expect(ledger.shards[1] == EventLedgerEntry.Shard())
        #expect(!ledger.isDone)
        #expect(try new.shardProgress(key: "k", shard: 0, count: 2).map(\.record) == [[3]])
        #expect(try new.shardProgress(key: "k", shard: 0, count: 4).isEmpty, "another shard count is another split")
    }

    @Test("A checkpoint's answer segments are kept beside it: each write adds only its own, a fold drops those before it, a record holding every answer drops them all", arguments: RedisServerFixture.Server.allCases)
    func answerSegments(_ kind: RedisServerFixture.Server) throws {
        let server = try RedisServerFixture(kind)
        defer { server.stop() }
        let node = try server.connect()
        _ = try node.acceptEvent(key: "k", serial: 1, bodyHash: Self.hash, body: Self.body, shards: 1, node: "a", now: 1)
        func save(_ record: UInt8, _ segment: RedisConnection.AnswerSegment?, topic: String = "region:0") throws -> Bool {
            try node.saveShardProgress(key: "k", serial: 1, shard: 0, count: 1, fence: 1, topic: topic, record: [record], answers: segment) == .saved
        }
        func segments(_ topic: String = "region:0") throws -> [UInt32: [UInt8]] {
            let recorded = try node.shardProgress(key: "k", shard: 0, count: 1).first { $0.topic == topic }
            return Dictionary(uniqueKeysWithValues: (recorded?.segments ?? []).map { ($0.number, $0.bytes) })
        }
        #expect(try save(1, .init(number: 0, firstKept: 0, bytes: [10])))
        #expect(try save(2, .init(number: 1, firstKept: 0, bytes: [11])))
        #expect(try save(3, .init(number: 2, firstKept: 0, bytes: [])), "no new answers: no segment")
        #expect(try save(1, .init(number: 0, firstKept: 0, bytes: [20]), topic: "region:1"))
        #expect(try segments() == [0: [10], 1: [11]])
        #expect(try node.shardProgress(key: "k", shard: 0, count: 1).first { $0.topic == "region:0" }?.record == [3])
        // A fold: segment 2 holds everything still needed; 0 and 1 go, the other topic's stay.
        #expect(try save(4, .init(number: 2, firstKept: 2, bytes: [12])))
        #expect(try save(5, .init(number: 3, firstKept: 2, bytes: [13])))
        #expect(try segments() == [2: [12], 3: [13]])
        #expect(try segments("region:1") == [0: [20]])
        // The final record holds every answer itself: every segment of the topic goes.
        #expect(try save(6, nil))
        #expect(try segments().isEmpty)
        #expect(try node.shardProgress(key: "k", shard: 0, count: 1).map(\.topic).sorted() == ["region:0", "region:1"])
    }
}

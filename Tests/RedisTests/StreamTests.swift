import Redis
import RedisTestSupport
import Testing

/// Streams and consumer groups against a real redis-server. Serialized: each test starts its own
/// server, and several tests wait for idle times on purpose.
@Suite(.serialized) struct StreamTests {
    @Test("An entry added with XADD is read once through the group and acknowledged with XACK", arguments: RedisServerFixture.Server.allCases)
    func roundTrip(_ kind: RedisServerFixture.Server) throws {
        let server = try RedisServerFixture(kind)
        defer { server.stop() } // also keeps the server alive to the end: ARC may end it after its last use
        let redis = try server.connect()
        #expect(try redis.createGroup("nodes", on: "s", startingAt: "0") == true)
        #expect(try redis.createGroup("nodes", on: "s", startingAt: "0") == false, "BUSYGROUP is tolerated")

        let binary: [UInt8] = [0, 1, 2, 0xff, 0x0d, 0x0a]
        let first = try redis.add(to: "s", [StreamEntry.Field("kind", "start"), StreamEntry.Field("blob", binary)])
        let second = try redis.add(to: "s", fields(["kind": "update"]))
        #expect(first < second)

        let read = try redis.readGroup("nodes", as: "a", from: "s", count: 10, block: .milliseconds(100))
        #expect(read.map(\.id) == [first, second])
        #expect(read[0].text("kind") == "start")
        #expect(read[0]["blob"] == binary, "values are binary-safe")
        #expect(read[1].fields == fields(["kind": "update"]))

        let pending = try redis.pending(on: "s", group: "nodes")
        #expect(pending.count == 2 && pending.lowest == first && pending.highest == second && pending.consumers == ["a": 2])
        #expect(try redis.readGroup("nodes", as: "a", from: "s", block: .milliseconds(50)).isEmpty, "delivered once")
        #expect(try redis.readGroup("nodes", as: "a", from: "s", after: "0").map(\.id) == [first, second],
                "its own pending entries, read again from 0")

        #expect(try redis.acknowledge([first, second], on: "s", group: "nodes") == 2)
        #expect(try redis.acknowledge([first], on: "s", group: "nodes") == 0)
        let after = try redis.pending(on: "s", group: "nodes")
        #expect(after.count == 0 && after.lowest == nil && after.highest == nil && after.consumers.isEmpty)
        #expect(try redis.range(of: "s").map(\.id) == [first, second], "XACK leaves the stream as it was")
        #expect(try redis.range(of: "s", from: "(\(first)").map(\.id) == [second])
    }

    @Test("A group that does not exist is a server error naming XREADGROUP, not a retryable one", arguments: RedisServerFixture.Server.allCases)
    func noGroup(_ kind: RedisServerFixture.Server) throws {
        let server = try RedisServerFixture(kind)
        defer { server.stop() } // also keeps the server alive to the end: ARC may end it after its last use
        let redis = try server.connect()
        try redis.add(to: "s", fields(["k": "v"]))
        let error = #expect(throws: RedisError.self) { try redis.readGroup("missing", as: "a", from: "s") }
        #expect(error?.serverCode == "NOGROUP")
        #expect(error?.isRetryable == false)
        #expect(error?.description.contains("XREADGROUP") == true)
        try redis.ping() // an error reply leaves the connection usable
    }

    @Test("XADD with MAXLEN ~ keeps the stream near its bound", arguments: RedisServerFixture.Server.allCases)
    func trimming(_ kind: RedisServerFixture.Server) throws {
        let server = try RedisServerFixture(kind)
        defer { server.stop() } // also keeps the server alive to the end: ARC may end it after its last use
        let redis = try server.connect()
        for index in 0..<1000 { try redis.add(to: "s", fields(["n": "\(index)"]), maxLength: 50) }
        let length = try redis.length(of: "s")
        #expect(length >= 50 && length < 250, "approximate trimming removes whole nodes: \(length)")
        #expect(try redis.range(of: "s", from: "-", to: "+", count: 1).first?.text("n") != "0", "the oldest went first")
        let last = try redis.range(of: "s", count: 1000).last
        #expect(last?.text("n") == "999")
    }

    @Test("Two consumers in one group share the entries without overlap", arguments: RedisServerFixture.Server.allCases)
    func twoConsumers(_ kind: RedisServerFixture.Server) throws {
        let server = try RedisServerFixture(kind)
        defer { server.stop() } // also keeps the server alive to the end: ARC may end it after its last use
        let a = try server.connect()
        let b = try server.connect()
        try a.createGroup("g", on: "events")
        var added: Set<StreamID> = []
        for index in 0..<20 { added.insert(try a.add(to: "events", fields(["n": "\(index)"]))) }

        var seenByA: Set<StreamID> = []
        var seenByB: Set<StreamID> = []
        while seenByA.count + seenByB.count < 20 {
            let forA = try a.readGroup("g", as: "a", from: "events", count: 3, block: .milliseconds(100))
            let forB = try b.readGroup("g", as: "b", from: "events", count: 4, block: .milliseconds(100))
            #expect(!forA.isEmpty || !forB.isEmpty)
            if forA.isEmpty && forB.isEmpty { break }
            seenByA.formUnion(forA.map(\.id))
            seenByB.formUnion(forB.map(\.id))
        }
        #expect(seenByA.isDisjoint(with: seenByB))
        #expect(seenByA.union(seenByB) == added)
        #expect(!seenByA.isEmpty && !seenByB.isEmpty)
        let pending = try a.pending(on: "events", group: "g")
        #expect(pending.consumers == ["a": Int64(seenByA.count), "b": Int64(seenByB.count)])
    }

    @Test("A consumer that dies without XACK leaves its entries to another through XAUTOCLAIM after the idle time", arguments: RedisServerFixture.Server.allCases)
    func autoClaim(_ kind: RedisServerFixture.Server) throws {
        let server = try RedisServerFixture(kind)
        defer { server.stop() } // also keeps the server alive to the end: ARC may end it after its last use
        let survivor = try server.connect()
        try survivor.createGroup("g", on: "events")
        var ids: [StreamID] = []
        for index in 0..<5 { ids.append(try survivor.add(to: "events", fields(["n": "\(index)"]))) }
        do {
            let doomed = try server.connect()
            #expect(try doomed.readGroup("g", as: "doomed", from: "events", count: 10).map(\.id) == ids)
        } // its connection closes here: it never acknowledges

        // The idle time is long enough that a loaded machine does not reach it between the two calls.
        let early = try survivor.autoClaim(on: "events", group: "g", for: "survivor", minIdle: .seconds(1))
        #expect(early.entries.isEmpty, "not idle long enough yet")
        sleep(milliseconds: 1100)
        let claimed = try survivor.autoClaim(on: "events", group: "g", for: "survivor", minIdle: .seconds(1))
        #expect(claimed.entries.map(\.id) == ids)
        #expect(claimed.entries.map { $0.text("n") } == ["0", "1", "2", "3", "4"])
        #expect(claimed.next == .zero, "the whole pending list was scanned")
        #expect(claimed.deleted.isEmpty)
        #expect(try survivor.pending(on: "events", group: "g").consumers == ["survivor": 5])
        #expect(try survivor.acknowledge(ids, on: "events", group: "g") == 5)
        #expect(try survivor.pending(on: "events", group: "g").count == 0)
    }

    @Test("XAUTOCLAIM reports pending entries that trimming removed as deleted", arguments: RedisServerFixture.Server.allCases)
    func autoClaimTrimmed(_ kind: RedisServerFixture.Server) throws {
        let server = try RedisServerFixture(kind)
        defer { server.stop() } // also keeps the server alive to the end: ARC may end it after its last use
        let redis = try server.connect()
        try redis.createGroup("g", on: "events")
        let id = try redis.add(to: "events", fields(["n": "0"]))
        _ = try redis.readGroup("g", as: "gone", from: "events")
        try redis.command(["XDEL", "events", .text(id.description)])
        let claimed = try redis.autoClaim(on: "events", group: "g", for: "other", minIdle: .milliseconds(1))
        #expect(claimed.entries.isEmpty)
        #expect(claimed.deleted == [id])
    }
}

/// Plain XREAD (no group: every node reads the whole registration stream) and the XINFO STREAM
/// figures a reader uses to tell that entries it never read were trimmed away.
@Suite(.serialized) struct StreamReadTests {
    @Test("XREAD gives every reader the entries after its id, waits for new ones, and XINFO STREAM counts what trimming removed", arguments: RedisServerFixture.Server.allCases)
    func readAfterAndHead(_ kind: RedisServerFixture.Server) throws {
        let server = try RedisServerFixture(kind)
        defer { server.stop() } // also keeps the server alive to the end: ARC may end it after its last use
        let redis = try server.connect()
        #expect(try redis.head(of: "s") == nil, "no stream yet")
        #expect(try redis.read(from: "s", after: .zero, block: .milliseconds(50)).isEmpty, "a missing stream blocks, then answers nothing")

        let ids = try (0..<5).map { try redis.add(to: "s", fields(["n": "\($0)"])) }
        #expect(try redis.read(from: "s", after: .zero).map(\.id) == ids)
        #expect(try redis.read(from: "s", after: ids[1], count: 2).map(\.id) == Array(ids[2...3]))
        #expect(try redis.read(from: "s", after: ids[4], block: .milliseconds(50)).isEmpty, "nothing newer: empty after the block")
        let other = try server.connect()
        #expect(try other.read(from: "s", after: ids[2]).map { $0.text("n") } == ["3", "4"], "no group: another reader sees the same entries")

        var head = try #require(try redis.head(of: "s"))
        #expect(head == StreamHead(length: 5, entriesAdded: 5, firstEntry: ids[0], lastGenerated: ids[4]))
        // MAXLEN ~ trims whole macro nodes (100 entries by default), so add well past one.
        var last = ids[4]
        for index in 0..<400 { last = try redis.add(to: "s", fields(["n": "\(index)"]), maxLength: 10) }
        head = try #require(try redis.head(of: "s"))
        #expect(head.entriesAdded == 405)
        #expect(head.length < 405 && head.length >= 10)
        #expect(try #require(head.firstEntry) > ids[4], "the first five went with the first trimmed node")
        #expect(head.lastGenerated == last)
    }
}

import Redis
import RedisTestSupport
import Testing

@Suite(.serialized) struct PersistenceTests {
    @Test("INFO persistence tells a server that keeps an append-only file from one that does not", arguments: RedisServerFixture.Server.allCases)
    func appendOnly(_ kind: RedisServerFixture.Server) throws {
        let volatile = try RedisServerFixture(kind)
        #expect(try volatile.connect().persistence() == RedisPersistence(appendOnly: false))
        let durable = try RedisServerFixture(kind, extraArguments: ["--appendonly", "yes"])
        #expect(try durable.connect().persistence().appendOnly)
    }

    @Test("The INFO text is read line by line; an answer without aof_enabled is not taken for one")
    func parsing() {
        #expect(RedisPersistence(info: "# Persistence\r\nloading:1\r\naof_enabled:1\r\n") == RedisPersistence(appendOnly: true, loading: true))
        #expect(RedisPersistence(info: "# Persistence\r\nloading:0\r\naof_enabled:0\r\n") == RedisPersistence(appendOnly: false))
        #expect(RedisPersistence(info: "# Server\r\nredis_version:7.0.15\r\n") == nil)
    }
}

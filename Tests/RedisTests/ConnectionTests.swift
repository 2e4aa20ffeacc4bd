import Redis
import RedisTestSupport
import Dispatch
import Glibc
import Testing

@Suite(.serialized) struct ConnectionTests {
    @Test("Connecting where no Redis listens fails fast with a clear, retryable error")
    func nothingListening() throws {
        let port = try freePort()
        let endpoint = RedisEndpoint(host: "127.0.0.1", port: port, connectTimeout: .seconds(1))
        let start = now()
        let error = #expect(throws: RedisError.self) { try RedisConnection(endpoint) }
        #expect(now() - start < 1.0)
        guard case let .connectFailed(where_, message)? = error else { Issue.record("not connectFailed: \(String(describing: error))"); return }
        #expect(where_ == "127.0.0.1:\(port)")
        #expect(message.contains("refused"), "hiredis's message: \(message)")
        #expect(error?.isRetryable == true)
        #expect(error?.description.hasPrefix("cannot connect to Redis at 127.0.0.1:\(port)") == true)
    }

    @Test("A Redis restarted mid-way fails the next command with a retryable error, and the connection works again after reconnect", arguments: RedisServerFixture.Server.allCases)
    func restart(_ kind: RedisServerFixture.Server) throws {
        let server = try RedisServerFixture(kind)
        defer { server.stop() } // also keeps the server alive to the end: ARC may end it after its last use
        let redis = try server.connect()
        try redis.createGroup("g", on: "s")
        try redis.add(to: "s", fields(["n": "1"]))

        server.stop()
        let lost = #expect(throws: RedisError.self) { try redis.add(to: "s", fields(["n": "2"])) }
        guard case let .connectionLost(command, _)? = lost else { Issue.record("not connectionLost: \(String(describing: lost))"); return }
        #expect(command == "XADD")
        #expect(lost?.isRetryable == true && lost?.needsReconnect == true)
        #expect(!redis.isConnected)
        #expect(throws: lost!) { try redis.ping() }

        let down = #expect(throws: RedisError.self) { try redis.reconnect() }
        #expect(down?.isRetryable == true)
        try server.start()
        try redis.reconnect()
        #expect(redis.isConnected)
        try redis.ping()
        // Nothing was saved: the group is gone, a server error that says so.
        let noGroup = #expect(throws: RedisError.self) { try redis.readGroup("g", as: "a", from: "s") }
        #expect(noGroup?.serverCode == "NOGROUP")
        #expect(try redis.createGroup("g", on: "s"))
    }

    @Test("A server that goes away during a BLOCK ends the read at once with a retryable error", arguments: RedisServerFixture.Server.allCases)
    func lostDuringBlock(_ kind: RedisServerFixture.Server) throws {
        let server = try RedisServerFixture(kind)
        defer { server.stop() } // also keeps the server alive to the end: ARC may end it after its last use
        let redis = try server.connect()
        try redis.createGroup("g", on: "s")
        let pid = server.pid
        DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(300)) { kill(pid, SIGKILL) }
        let start = now()
        let error = #expect(throws: RedisError.self) { try redis.readGroup("g", as: "a", from: "s", block: .seconds(5)) }
        #expect(now() - start < 3, "the read ended with the connection, not at the end of its BLOCK")
        guard case let .connectionLost(command, _)? = error else { Issue.record("not connectionLost: \(String(describing: error))"); return }
        #expect(command == "XREADGROUP")
        #expect(error?.isRetryable == true)
    }

    @Test("A command slower than the command timeout is a lost connection; a BLOCK longer than it is not", arguments: RedisServerFixture.Server.allCases)
    func timeouts(_ kind: RedisServerFixture.Server) throws {
        let server = try RedisServerFixture(kind, extraArguments: ["--enable-debug-command", "yes"])
        defer { server.stop() } // also keeps the server alive to the end: ARC may end it after its last use
        let redis = try server.connect(commandTimeout: .milliseconds(200))
        try redis.createGroup("g", on: "s")
        let start = now()
        #expect(try redis.readGroup("g", as: "a", from: "s", block: .milliseconds(500)).isEmpty)
        #expect(now() - start >= 0.45)

        let slow = #expect(throws: RedisError.self) { try redis.command(["DEBUG", "SLEEP", "0.6"]) }
        #expect(slow?.needsReconnect == true)
        sleep(milliseconds: 600)
        try redis.reconnect()
        try redis.ping()
    }

    @Test("AUTH: no password is refused by the server, a wrong one fails the connect, the right one works", arguments: RedisServerFixture.Server.allCases)
    func auth(_ kind: RedisServerFixture.Server) throws {
        let server = try RedisServerFixture(kind, extraArguments: ["--requirepass", "s3cret"])
        defer { server.stop() } // also keeps the server alive to the end: ARC may end it after its last use
        let anonymous = try server.connect()
        let refused = #expect(throws: RedisError.self) { try anonymous.ping() }
        #expect(refused?.serverCode == "NOAUTH")

        let wrong = #expect(throws: RedisError.self) { try RedisConnection(server.endpoint(password: "nope")) }
        guard case let .connectFailed(_, message)? = wrong else { Issue.record("not connectFailed: \(String(describing: wrong))"); return }
        #expect(message.hasPrefix("AUTH refused"))

        let redis = try RedisConnection(server.endpoint(password: "s3cret"))
        try redis.ping()
    }
}

@Suite struct ValueTests {
    @Test("Stream ids parse, print and order as Redis orders them")
    func streamIDs() throws {
        let id = try #require(StreamID("1700000000000-12"))
        #expect(id.description == "1700000000000-12")
        #expect(StreamID("5") == StreamID(milliseconds: 5, sequence: 0))
        #expect(StreamID("1-x") == nil && StreamID("") == nil && StreamID("1-2-3") == nil)
        #expect(StreamID("1-10")! > StreamID("1-9")!)
        #expect(StreamID("2-0")! > StreamID("1-99")!)
    }

    @Test("Server errors that mean 'not now' are retryable, the others are not")
    func retryable() {
        #expect(RedisError.server(command: "XADD", message: "LOADING Redis is loading the dataset in memory").isRetryable)
        #expect(RedisError.server(command: "EVAL", message: "BUSY Redis is busy running a script").isRetryable)
        #expect(!RedisError.server(command: "XGROUP CREATE", message: "BUSYGROUP Consumer Group name already exists").isRetryable)
        #expect(!RedisError.server(command: "GET", message: "WRONGTYPE Operation against a key holding the wrong kind of value").isRetryable)
        #expect(RedisError.connectionLost(command: "XACK", message: "Connection reset by peer").isRetryable)
    }
}

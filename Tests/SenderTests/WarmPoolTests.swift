#if canImport(Glibc)
import Glibc
#endif
import APNs
import IO
import Sender
import Simulator
import Testing
import Vocabulary

/// What the daemon needs from one long-lived pool: connections that are open before the first
/// event, events that keep their own books on shared connections, and urgent pushes that
/// overtake a bulk fan-out.
@Suite struct WarmPoolTests {
    final class IDSink: PushOutcomeSink, @unchecked Sendable {
        let ids = Lock<[UInt64]>([])
        func pushCompleted(_ push: CompletedPush) { ids.withLock { $0.append(push.id) } }
        var count: Int { ids.withLock { $0.count } }
    }

    static func group(_ label: String, sink: PushOutcomeSink? = nil) -> PushGroup {
        PushGroup(label: label, headers: [("apns-push-type", "liveactivity"), ("apns-topic", "com.example.eew.push-type.liveactivity")],
                  body: Array(#"{"aps":{"timestamp":1,"event":"update","content-state":{}}}"#.utf8), resendUnknown: true, sink: sink)
    }

    static func jobs(_ count: Int, group: PushGroup, firstID: UInt64 = 0) -> [PushJob] {
        (0..<count).map { index in
            var token = DeviceToken(bytes: [UInt8](repeating: 0xC3, count: 32))!
            token.overwrite(at: 0, bigEndian: firstID + UInt64(index))
            return PushJob(token: token, group: group, id: firstID + UInt64(index))
        }
    }

    @Test func aWarmPoolOpensItsConnectionsBeforeAnyWorkAndKeepsThemOpen() throws {
        let simulator = try testSimulator()
        defer { simulator.stop() }
        var configuration = try testPool(port: simulator.port, connections: 3)
        configuration.keepWarm = true
        configuration.keepalive = .milliseconds(200)
        let pool = try ConnectionPool(configuration: configuration)
        defer { pool.shutdown() }
        let until = MonotonicInstant.now() + .seconds(5)
        while simulator.counters.connections < 3 && MonotonicInstant.now() < until { usleep(10_000) }
        #expect(simulator.counters.connections == 3)
        // Several keep-alive intervals later nothing was dropped or reopened.
        usleep(800_000)
        #expect(simulator.counters.connections == 3)
        let sink = IDSink()
        pool.send(Self.jobs(10, group: Self.group("warm", sink: sink)))
        #expect(pool.waitUntilFinished(timeout: .seconds(5)))
        #expect(sink.count == 10)
        #expect(simulator.counters.connections == 3)
    }

    @Test func eachGroupsOutcomesGoToItsOwnSinkAndTheRestToThePools() throws {
        let simulator = try testSimulator()
        defer { simulator.stop() }
        let poolSink = IDSink(), eventA = IDSink(), eventB = IDSink()
        let pool = try ConnectionPool(configuration: try testPool(port: simulator.port), sink: poolSink)
        defer { pool.shutdown() }
        pool.send(Self.jobs(30, group: Self.group("a", sink: eventA)) + Self.jobs(20, group: Self.group("b", sink: eventB), firstID: 100)
                  + Self.jobs(5, group: Self.group("plain"), firstID: 200))
        #expect(pool.waitUntilFinished(timeout: .seconds(10)))
        #expect(eventA.count == 30)
        #expect(eventB.count == 20)
        #expect(poolSink.count == 5)
    }

    @Test func urgentPushesOvertakeABulkFanOutAlreadyQueued() throws {
        // One connection, one stream at a time, 20 ms per answer: a strict queue.
        let simulator = try testSimulator { $0.latency = .milliseconds(20); $0.maximumStreams = 1 }
        defer { simulator.stop() }
        var configuration = try testPool(port: simulator.port, connections: 1)
        configuration.streamsPerConnection = 1
        let sink = IDSink()
        let pool = try ConnectionPool(configuration: configuration, sink: sink)
        defer { pool.shutdown() }
        pool.send(Self.jobs(60, group: Self.group("election")))
        usleep(100_000)  // the bulk fan-out is under way
        pool.send(Self.jobs(1, group: Self.group("earthquake"), firstID: 1_000), urgent: true)
        #expect(pool.waitUntilFinished(timeout: .seconds(10)))
        let order = sink.ids.withLock { $0 }
        let position = try #require(order.firstIndex(of: 1_000))
        // Behind at most the pushes in flight or already taken when it arrived, not the 50-odd queued.
        #expect(position < 15, "the urgent push finished \(position + 1)th of \(order.count)")
    }
}

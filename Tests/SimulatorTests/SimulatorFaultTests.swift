#if canImport(Glibc)
import Glibc
#endif
import Crypto
import HTTP2
import HTTP2TestSupport
import JSONCore
import Simulator
import Testing
import Vocabulary

/// The faults pool tests build on — a silent connection, a GOAWAY that says why, and the
/// provider-token rule counted per key — seen from a real client connection on loopback.
@Suite struct SimulatorFaultTests {
    func push(_ token: String) -> ClientRequest {
        ClientRequest(method: "POST", path: "/3/device/\(token)", headers: liveActivityHeaders(), body: updateBody())
    }

    @Test("a stalled connection answers the pushes before the Nth, then nothing: no answer, no PING ACK, and it stays open while other connections keep working")
    func stallAfterSilencesOneConnection() throws {
        try withSimulator({ $0.stallAfter = 3 }) { sim in
            // PING after 100 ms idle, given up after 1 s: the first request waits for one PING ACK, so
            // the server is shown to answer PINGs on this connection before the stall.
            let client = try RecordingClient(port: sim.port, ca: sim.certificates.ca, authorization: try sim.authorization(),
                                             request: push(deviceToken("d1")), count: 3, waitForPingAck: true,
                                             pingAfterIdle: .nanoseconds(100_000_000), pingTimeout: .nanoseconds(1_000_000_000))
            defer { client.finish() }
            #expect(client.wait(seconds: 10) { _ in sim.counters.connectionsStalled == 1 }, "the third push must stall its connection")

            // While the stalled connection is open, a new connection is served as usual.
            let other = try sim.perform([push(deviceToken("d2"))])
            #expect(other.map(\.status) == [200], "\(other)")

            #expect(client.waitUntilClosed(seconds: 10), "the client must give up on the silent connection")
            let state = client.state.withLock { $0 }
            #expect(state.results.count == 3, "\(state.results)")
            #expect(state.results.prefix(2).map(\.status) == [200, 200], "\(state.results)")
            #expect(state.results.last?.status == nil, "the Nth push must get no answer: \(state.results)")
            // The client closed because a PING went unanswered — not because the server closed or reset.
            #expect(state.closeError?.description.contains("PING") == true, "\(String(describing: state.closeError))")
            #expect(state.acknowledgedAtLastSubmit >= 1)
            #expect(state.pingsAcknowledged == state.acknowledgedAtLastSubmit, "no PING ACK after the stall")
            #expect(state.pingsSent > state.pingsAcknowledged)
            #expect(state.goAway == nil)
            let counters = sim.counters
            #expect(counters.accepted == 3, "two on the stalled connection, one on the other")
            #expect(counters.connectionsStalled == 1)
        }
    }

    @Test("the GOAWAY of goAwayAfter carries goAwayReason as JSON {\"reason\":…} debug data, escaped")
    func goAwayReasonIsTheDebugData() throws {
        let reason = #"Idle "timeout" \ 1"#
        try withSimulator({ $0.goAwayAfter = 1; $0.goAwayReason = reason }) { sim in
            let client = try RecordingClient(port: sim.port, ca: sim.certificates.ca, authorization: try sim.authorization(),
                                             request: push(deviceToken("d3")), count: 1)
            defer { client.finish() }
            #expect(client.waitUntilClosed(seconds: 10))
            let state = client.state.withLock { $0 }
            #expect(state.results.map(\.status) == [200], "\(state.results)")
            let goAway = try #require(state.goAway)
            #expect(goAway.debugData == #"{"reason":"Idle \"timeout\" \\ 1"}"#)
            #expect(try JSONParser.parse(Array(goAway.debugData.utf8))["reason"]?.stringValue == reason)
            #expect(sim.counters.goAwaysSent == 1)
        }
    }

    @Test("without goAwayReason the GOAWAY carries no debug data")
    func goAwayWithoutReasonHasNoDebugData() throws {
        try withSimulator({ $0.goAwayAfter = 1 }) { sim in
            let client = try RecordingClient(port: sim.port, ca: sim.certificates.ca, authorization: try sim.authorization(),
                                             request: push(deviceToken("d4")), count: 1)
            defer { client.finish() }
            #expect(client.waitUntilClosed(seconds: 10))
            let goAway = try #require(client.state.withLock { $0.goAway })
            #expect(goAway.debugData == "")
        }
    }

    /// Three connections, as three `sokuho send` processes that each signed their own token.
    func threeConnectionsWithThreeTokens(_ sim: RunningSimulator) throws -> [ClientResult] {
        let now = WallClock.seconds()
        return try [now - 90, now - 60, now - 30].enumerated().map { index, issuedAt in
            let authorization = try RunningSimulator.authorization(keyPath: sim.certificates.providerKey, keyID: SimulatorCertificates.keyID,
                                                                   teamID: SimulatorCertificates.teamID, issuedAt: issuedAt)
            let options = ClientConnectionOptions(host: "127.0.0.1", port: sim.port, tls: try TLSConfiguration.client(caFile: sim.certificates.ca))
            let results = try OneShotClient.perform([push(deviceToken("e\(index)"))], options: options, authorization: authorization,
                                                    timeout: .nanoseconds(10_000_000_000)).get()
            return results[0]
        }
    }

    @Test("with tokenScope key, a second new token for the same key within 20 minutes is refused 429 TooManyProviderTokenUpdates, even on another connection")
    func keyScopeCountsTokenChangesOverConnections() throws {
        try withSimulator({ $0.tokenScope = .key }) { sim in
            let results = try threeConnectionsWithThreeTokens(sim)
            #expect(results.map(\.status) == [200, 200, 429], "\(results)")
            #expect(results[2].reason == "TooManyProviderTokenUpdates")
            #expect(sim.counters.rejected["TooManyProviderTokenUpdates"] == 1)
        }
    }

    @Test("with tokenScope connection (the default), new tokens on separate connections are all accepted")
    func connectionScopeLetsEachConnectionHaveItsToken() throws {
        try withSimulator { sim in
            #expect(sim.simulator.configuration.tokenScope == .connection)
            let results = try threeConnectionsWithThreeTokens(sim)
            #expect(results.map(\.status) == [200, 200, 200], "\(results)")
        }
    }
}

/// The same faults switched on through `sokuho simulator`'s flags, in the built binary.
@Suite struct SimulatorFaultFlagTests {
    @Test("sokuho simulator --token-scope key --goaway-after 1 --goaway-reason --stall-after 4: the flags reach the running simulator")
    func faultFlagsTakeEffect() throws {
        try #require(access(SimulatorProcessTests.binary, X_OK) == 0, "build the binary first: swift build")
        let certDir = temporaryDirectory("sokuho-faultflags") + "/certs"
        let child = ChildProcess(SimulatorProcessTests.binary, ["simulator", "--cert-dir", certDir, "--duration", "60", "--token-scope", "key",
                                                                "--goaway-after", "1", "--goaway-reason", "Bye \"now\"", "--stall-after", "4"])
        var ended = false
        defer { if !ended { kill(child.pid, SIGKILL); _ = child.wait() } }
        let line = try #require(child.readLine(), "no start line: \(child.stderr)")
        let port = Int(try #require(try? JSONParser.parse(Array(line.utf8))["port"]?.int64Value))
        let ca = certDir + "/ca.pem", key = certDir + "/AuthKey_SIMKEY0001.p8"
        let now = WallClock.seconds()
        let tokens = try [now - 90, now - 60, now - 30].map {
            try RunningSimulator.authorization(keyPath: key, keyID: "SIMKEY0001", teamID: "SOKUHOTEAM", issuedAt: $0)
        }
        let request = ClientRequest(method: "POST", path: "/3/device/\(deviceToken("d5"))", headers: liveActivityHeaders(), body: updateBody())

        // Three connections with three tokens of one key: the third token is one change too many,
        // and every push is followed by a GOAWAY that gives the reason.
        var statuses: [Int?] = []
        for token in tokens {
            let client = try RecordingClient(port: port, ca: ca, authorization: token, request: request, count: 1)
            defer { client.finish() }
            #expect(client.waitUntilClosed(seconds: 10))
            let state = client.state.withLock { $0 }
            statuses.append(state.results.first?.status)
            #expect(state.goAway?.debugData == #"{"reason":"Bye \"now\""}"#, "\(String(describing: state.goAway))")
        }
        #expect(statuses == [200, 200, 429])

        // The fourth push stalls its connection: no answer, no PING ACK, until the client gives up.
        let stalled = try RecordingClient(port: port, ca: ca, authorization: tokens[0], request: request, count: 1,
                                          pingAfterIdle: .nanoseconds(100_000_000), pingTimeout: .nanoseconds(1_000_000_000))
        defer { stalled.finish() }
        #expect(stalled.waitUntilClosed(seconds: 10))
        let state = stalled.state.withLock { $0 }
        #expect(state.results.first?.status == nil, "\(state.results)")
        #expect(state.closeError?.description.contains("PING") == true, "\(String(describing: state.closeError))")
        #expect(state.goAway == nil)

        #expect(kill(child.pid, SIGTERM) == 0)
        #expect(child.wait() == 0)
        ended = true
        #expect(child.stderr.contains("(1 stalled)"), "stderr: \(child.stderr)")
        #expect(child.stderr.contains("TooManyProviderTokenUpdates 1"), "stderr: \(child.stderr)")
    }
}

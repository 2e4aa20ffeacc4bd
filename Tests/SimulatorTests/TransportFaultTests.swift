import Crypto
import HTTP2
import HTTP2TestSupport
import Simulator
import Testing
import Vocabulary

/// The simulator's connection-level behaviour seen through the raw `OneShotClient` (no retries, so
/// every refusal and failure shows): APNs' one-stream start, GOAWAY and a dropped connection.
@Suite struct TransportFaultTests {
    func pushes(_ count: Int, token: String) -> [ClientRequest] {
        (0..<count).map { _ in ClientRequest(method: "POST", path: "/3/device/\(token)", headers: liveActivityHeaders(), body: updateBody()) }
    }

    /// With latency every answer is held back, so a client that opened a second stream before the
    /// first push was accepted would have it refused (REFUSED_STREAM) by the simulator's
    /// SETTINGS_MAX_CONCURRENT_STREAMS of 1: every request answered 200 proves it waited.
    @Test func oneStreamUntilTheFirstPushIsAccepted() throws {
        try withSimulator({ $0.latency = .nanoseconds(20_000_000); $0.oneStreamUntilFirstPush = true; $0.maximumStreams = 1000 }) { sim in
            let results = try sim.perform(pushes(6, token: deviceToken("c1")))
            #expect(results.map(\.status) == Array(repeating: 200, count: 6), "\(results.map(\.failure))")
            #expect(sim.counters.accepted == 6)
            #expect(sim.counters.rejectedTotal == 0)
            #expect(sim.counters.connections == 1)
        }
    }

    /// The same client against a simulator that stays at one stream: still no request is refused.
    @Test func aServerLimitOfOneIsObeyedThroughout() throws {
        try withSimulator({ $0.latency = .nanoseconds(5_000_000); $0.maximumStreams = 1 }) { sim in
            let results = try sim.perform(pushes(4, token: deviceToken("c2")))
            #expect(results.map(\.status) == [200, 200, 200, 200], "\(results.map(\.failure))")
        }
    }

    /// GOAWAY after the second request names it as the last processed one: the first two are
    /// answered, the rest were provably not processed (refused, safe to resend) and the simulator
    /// counted only the two.
    @Test func goAwayMidRequestLeavesTheRestRefused() throws {
        try withSimulator({ $0.goAwayAfter = 2; $0.latency = .nanoseconds(5_000_000) }) { sim in
            let results = try sim.perform(pushes(5, token: deviceToken("c3")))
            #expect(results[0].status == 200 && results[1].status == 200, "\(results)")
            for result in results[2...] {
                #expect(result.failure?.provablyUnprocessed == true, "\(result)")
            }
            #expect(sim.counters.goAwaysSent == 1)
            #expect(sim.counters.accepted == 2)
        }
    }

    /// A connection dropped at the second request without GOAWAY: the answer already sent arrives,
    /// the request in flight has an unknown outcome (it may have been processed).
    @Test func aDroppedConnectionLeavesTheRequestInFlightUnknown() throws {
        try withSimulator({ $0.resetAfter = 2 }) { sim in
            let results = try sim.perform(pushes(4, token: deviceToken("c4")))
            #expect(results[0].status == 200, "\(results)")
            guard case .unknown = results[1].failure else { Issue.record("request 2: \(results[1])"); return }
            #expect(sim.counters.connectionsDropped == 1)
            #expect(sim.counters.accepted == 1)
        }
    }

    /// The simulator's own size check, for senders that do not check first.
    @Test func anOversizedBodyIs413() throws {
        try withSimulator { sim in
            var body = Array(#"{"aps":{"alert":"x"},"pad":""#.utf8)
            body += Array(repeating: UInt8(ascii: "p"), count: 4097 - body.count - 2) + Array("\"}".utf8)
            #expect(body.count == 4097)
            let request = ClientRequest(method: "POST", path: "/3/device/\(deviceToken("c5"))",
                                        headers: [("apns-push-type", "alert"), ("apns-topic", testBundle)], body: body)
            let results = try sim.perform([request])
            #expect(results[0].status == 413)
            #expect(results[0].reason == "PayloadTooLarge")
            #expect(sim.counters.rejected["PayloadTooLarge"] == 1)
        }
    }

    /// A second team on a connection is refused; changing tokens within 20 minutes is too.
    @Test func tokensMayNotChangeOnAConnectionWithinTwentyMinutes() throws {
        try withSimulator { sim in
            let key = sim.certificates.providerKey
            let now = WallClock.seconds()
            let first = try RunningSimulator.authorization(keyPath: key, keyID: SimulatorCertificates.keyID,
                                                           teamID: SimulatorCertificates.teamID, issuedAt: now - 60)
            let second = try RunningSimulator.authorization(keyPath: key, keyID: SimulatorCertificates.keyID,
                                                            teamID: SimulatorCertificates.teamID, issuedAt: now - 30)
            let results = try TokenSwitchingClient.perform(port: sim.port, ca: sim.certificates.ca,
                                                           authorizations: [first, first, second],
                                                           request: pushes(1, token: deviceToken("c6"))[0])
            #expect(results.map(\.status) == [200, 200, 429], "\(results)")
            #expect(results[2].reason == "TooManyProviderTokenUpdates")
        }
    }
}

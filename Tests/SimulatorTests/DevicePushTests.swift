import Crypto
import JSONCore
import Simulator
import SokuhoCLI
import Testing

/// Device pushes through `sokuho send --token` beyond the acceptance flow: host names, dead tokens
/// and injected faults.
@Suite struct DevicePushTests {
    let dir = temporaryDirectory()
    var payload: String { writeFile(dir, "update.json", updateBody()) }

    /// By name: the certificate's DNS name is verified (not just its IP address), and where
    /// `localhost` also resolves to ::1 (the simulator listens on 127.0.0.1 only) the client moves on
    /// to the next address.
    @Test func aHostNameIsResolvedAndVerified() throws {
        try withSimulator { sim in
            var options = sim.connectionOptions()
            options[1] = "localhost:\(sim.port)"
            let run = sokuho(["send", "--token", deviceToken("71"), "--payload", payload, "--push-type", "liveactivity"] + options)
            #expect(run.code == .success, "\(run)")
        }
    }

    @Test func anUnregisteredTokenIs410WithItsTimestamp() throws {
        let token = deviceToken("72")
        try withSimulator({ $0.unregisteredTokens = [token] }) { sim in
            let run = sim.run(["send", "--token", token, "--payload", payload, "--push-type", "liveactivity", "--json"])
            #expect(run.code == .refused, "\(run)")
            let answer = try JSONParser.parse(Array(run.line.utf8))
            #expect(answer["status"]?.int64Value == 410)
            #expect(answer["reason"]?.stringValue == "Unregistered")
            let timestamp = try #require(answer["timestamp"]?.int64Value)
            #expect(abs(timestamp - SystemClock.seconds() * 1000) < 60_000, "milliseconds since 1970: \(timestamp)")

            let human = sim.run(["send", "--token", token, "--payload", payload, "--push-type", "liveactivity"])
            #expect(human.err.contains("410 Unregistered: the device token is not valid"), "\(human)")
        }
    }

    @Test func anInjectedFaultIsAnsweredLikeAPNs() throws {
        try withSimulator({ $0.faults = [("TooManyRequests", 1)] }) { sim in
            let run = sim.run(["send", "--token", deviceToken("73"), "--payload", payload, "--push-type", "liveactivity"])
            #expect(run.code == .refused, "\(run)")
            #expect(run.out.hasPrefix("status 429"), "\(run)")
            #expect(run.err.contains("TooManyRequests: a temporary refusal"), "\(run)")
            #expect(sim.counters.rejected == ["TooManyRequests": 1])
        }
    }
}

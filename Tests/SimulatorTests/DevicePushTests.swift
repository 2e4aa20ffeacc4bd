import Crypto
import HTTP2
import HTTP2TestSupport
import JSONCore
import Simulator
import SokuhoCLI
import Testing
import Vocabulary

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

    @Test("send --server-name verifies the certificate for that name, and a name it is not for is refused naming the certificate's names")
    func serverNameIsVerified() throws {
        try withSimulator { sim in
            let send = ["send", "--token", deviceToken("74"), "--payload", payload, "--push-type", "liveactivity"]
            let wrong = sim.run(send + ["--server-name", "push.example.test"])
            #expect(wrong.code == .unavailable, "\(wrong)")
            #expect(wrong.err.contains("the certificate is for DNS:localhost, IP:127.0.0.1, IP:::1"), "\(wrong)")
            #expect(wrong.err.contains("not push.example.test; pass --server-name NAME or connect by that name"), "\(wrong)")
            #expect(sim.run(send + ["--server-name", "localhost"]).code == .success)
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
            #expect(abs(timestamp - WallClock.seconds() * 1000) < 60_000, "milliseconds since 1970: \(timestamp)")

            let human = sim.run(["send", "--token", token, "--payload", payload, "--push-type", "liveactivity"])
            #expect(human.err.contains("410 Unregistered: the device token is not valid"), "\(human)")
        }
    }

    /// The simulator caches its verdict on a body and headers without `apns-id`: a push refused for
    /// its `apns-id` must not make the next push with the same body and a good `apns-id` fail too.
    @Test func aBadApnsIDDoesNotCondemnTheNextPushWithTheSameBody() throws {
        try withSimulator { sim in
            let path = "/3/device/\(deviceToken("74"))", body = updateBody()
            let bad = try sim.perform([ClientRequest(method: "POST", path: path, headers: liveActivityHeaders() + [("apns-id", "Not-A-UUID")], body: body)])
            #expect(bad[0].status == 400 && bad[0].reason == "BadMessageId", "\(bad)")
            let good = try sim.perform([ClientRequest(method: "POST", path: path, headers: liveActivityHeaders() + [("apns-id", "123e4567-e89b-42d3-a456-426614174000")], body: body)])
            #expect(good[0].status == 200, "\(good)")
        }
    }

    /// `send` signs its token just before sending: "expired" can only mean a wrong clock, so the
    /// message must not suggest running the command again.
    @Test func anExpiredProviderTokenPointsAtTheClock() throws {
        try withSimulator({ $0.faults = [("ExpiredProviderToken", 1)] }) { sim in
            let run = sim.run(["send", "--token", deviceToken("75"), "--payload", payload, "--push-type", "liveactivity"])
            #expect(run.code == .refused, "\(run)")
            // The token is the current 30-minute window's, so it is < 30 min old here: the clock is blamed.
            #expect(run.err.contains("403 ExpiredProviderToken: APNs says the provider token issued at "), "\(run)")
            #expect(run.err.contains("minutes behind APNs'. Synchronise it (NTP)"), "\(run)")
        }
    }

    /// Every attempt refused: `send` retries the 429 with back-off (0.5–1 s, then 1–2 s) until the
    /// next retry would land after `--timeout`, then reports the last refusal. 3 s: the third attempt
    /// (at 1.5–3 s) is made, a fourth (3.5 s or later) is not — and a box busy with the other suites
    /// has a second more for the first connection (at 2 s a loaded run once saw no answer at all).
    @Test func anInjectedFaultIsAnsweredLikeAPNs() throws {
        try withSimulator({ $0.faults = [("TooManyRequests", 1)] }) { sim in
            let run = sim.run(["send", "--token", deviceToken("73"), "--payload", payload, "--push-type", "liveactivity", "--timeout", "3"])
            #expect(run.code == .refused, "\(run)")
            #expect(run.out.hasPrefix("status 429"), "\(run)")
            #expect(run.err.contains("TooManyRequests: a temporary refusal"), "\(run)")
            #expect(sim.counters.rejected.count == 1 && (2...3).contains(sim.counters.rejected["TooManyRequests"] ?? 0), "\(sim.counters.rejected)")
        }
    }

    /// Credentials and endpoint from SOKUHO_* variables, as a service would configure them.
    @Test func credentialsAndEndpointComeFromTheEnvironment() throws {
        try withSimulator { sim in
            let environment = [
                "SOKUHO_TEAM_ID": SimulatorCertificates.teamID, "SOKUHO_KEY_ID": SimulatorCertificates.keyID,
                "SOKUHO_KEY": sim.certificates.providerKey, "SOKUHO_TOPIC": testBundle, "SOKUHO_CA_FILE": sim.certificates.ca,
                "SOKUHO_HOST": "127.0.0.1:\(sim.port)", "SOKUHO_MANAGE_HOST": "127.0.0.1:\(sim.managePort)",
            ]
            let channel = sokuho(["channels", "create", "--json"], environment: environment)
            #expect(channel.code == .success, "\(channel)")
            let id = try #require(try JSONParser.parse(Array(channel.line.utf8))["channel"]?.stringValue)
            let push = sokuho(["send", "--token", deviceToken("74"), "--payload", payload, "--push-type", "liveactivity"],
                              environment: environment)
            #expect(push.code == .success, "\(push)")
            let missing = sokuho(["send", "--channel", id, "--payload", payload],
                                 environment: environment.filter { $0.key != "SOKUHO_KEY_ID" })
            #expect(missing.code == .usage, "\(missing)")
            #expect(missing.err.contains("missing --key-id (or SOKUHO_KEY_ID)"), "\(missing)")
        }
    }
}

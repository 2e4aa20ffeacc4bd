import Crypto
import FCM
import JSONCore
import Simulator
import SokuhoCLI
import Testing

/// `sokuho send --provider fcm` against the simulator's FCM side over loopback and real TLS, and
/// `sokuho bench --provider fcm` (the built binary with its own simulator): the exit codes `send`
/// documents, the `--json` shape, and options of the other provider refused by name.
@Suite struct FCMSendTests {
    let dir = temporaryDirectory("sokuho-fcmsend")

    func send(_ sim: RunningSimulator, token: String = fcmToken("a"), account: String? = nil, _ extra: [String]) -> CLIRun {
        sokuho(["send", "--provider", "fcm", "--token", token, "--service-account", account ?? sim.simulator.fcmServiceAccountFile,
                "--fcm-host", "127.0.0.1:\(sim.port)", "--ca-file", sim.certificates.ca] + extra)
    }

    @Test("a data message is delivered: exit 0 and --json prints status, name, errorCode and reason")
    func aDataMessageIsDelivered() throws {
        try withSimulator { sim in
            let run = send(sim, ["--data", "eventKey=eew-1", "--data", "kind=update", "--json"])
            #expect(run.code == .success, "\(run)")
            let answer = try JSONParser.parse(Array(run.line.utf8))
            #expect(answer.objectMembers?.map(\.key) == ["status", "name", "errorCode", "reason"])
            #expect(answer["status"]?.int64Value == 200 && answer["errorCode"] == .null && answer["reason"] == .null)
            #expect(answer["name"]?.stringValue?.hasPrefix("projects/\(SimulatorCertificates.fcmProjectID)/messages/0:") == true, "\(run)")
            #expect(sim.counters.fcmAccepted == 1 && sim.counters.fcmTokensGranted == 1)
        }
    }

    @Test("--event builds a Live Update from the Live Activity content flags, and it is delivered")
    func aLiveUpdateIsDelivered() throws {
        try withSimulator { sim in
            let state = writeFile(dir, "state.json", #"{"forecastIntensity":"5-"}"#)
            let run = send(sim, ["--event", "start", "--event-key", "eew-20260823020000", "--group", "region:301", "--content-state", state,
                                 "--alert-title", "緊急地震速報", "--alert-body", "強い揺れに警戒", "--ttl", "60", "--collapse-key", "eew"])
            #expect(run.code == .success, "\(run)")
            #expect(run.out.hasPrefix("status 200  name projects/"), "\(run)")
            #expect(sim.counters.fcmAccepted == 1)
        }
    }

    @Test("an unregistered token is refused: exit 1 naming UNREGISTERED")
    func anUnregisteredTokenIsExitOne() throws {
        try withSimulator({ $0.fcmUnregisteredTokens = [fcmToken("dead")] }) { sim in
            let run = send(sim, token: fcmToken("dead"), ["--data", "eventKey=eew-1"])
            #expect(run.code == .refused, "\(run)")
            #expect(run.out.contains("status 404") && run.out.contains("errorCode UNREGISTERED"), "\(run)")
            #expect(run.err.contains("FCM refused the message: UNREGISTERED"), "\(run)")
            let json = send(sim, token: fcmToken("dead"), ["--data", "eventKey=eew-1", "--json"])
            let answer = try JSONParser.parse(Array(json.line.utf8))
            #expect(json.code == .refused && answer["errorCode"]?.stringValue == "UNREGISTERED", "\(json)")
        }
    }

    @Test("what FCM would refuse is refused before sending (65, naming the field), and nothing reaches the simulator")
    func invalidInputIsRefusedBeforeSending() throws {
        try withSimulator { sim in
            let reserved = send(sim, ["--data", "google.sent_time=1"])
            #expect(reserved.code == .dataError && reserved.err.contains("message.data.google.sent_time"), "\(reserved)")
            let notAToken = send(sim, token: "not a token!", ["--data", "k=v"])
            #expect(notAToken.code == .dataError && notAToken.err.contains("--token"), "\(notAToken)")
            let noEquals = send(sim, ["--data", "novalue"])
            #expect(noEquals.code == .dataError && noEquals.err.contains("--data"), "\(noEquals)")
            let missing = send(sim, account: dir + "/nope.json", ["--data", "k=v"])
            #expect(missing.code == .noInput && missing.err.contains("nope.json"), "\(missing)")
            #expect(sim.counters.connections == 0 && sim.counters.fcmTokensGranted == 0)
        }
    }

    @Test("options of the other provider, and --data with --event, are usage errors naming the flag")
    func mixedOptionsAreUsageErrors() throws {
        try withSimulator { sim in
            let apnsFlag = send(sim, ["--data", "k=v", "--topic", "com.example.eew"])
            #expect(apnsFlag.code == .usage && apnsFlag.err.contains("--topic"), "\(apnsFlag)")
            let both = send(sim, ["--data", "k=v", "--event", "end", "--event-key", "e"])
            #expect(both.code == .usage && both.err.contains("--data"), "\(both)")
            let eventFlag = send(sim, ["--data", "k=v", "--group", "region:1"])
            #expect(eventFlag.code == .usage && eventFlag.err.contains("--group"), "\(eventFlag)")
            let fcmFlagOnAPNs = sim.run(["send", "--token", deviceToken("a1"), "--event", "end", "--service-account", "x.json"])
            #expect(fcmFlagOnAPNs.code == .usage && fcmFlagOnAPNs.err.contains("--service-account"), "\(fcmFlagOnAPNs)")
            #expect(sim.counters.connections == 0)
        }
    }

    @Test("a service account the token endpoint refuses is exit 1 with Google's invalid_grant, before any message")
    func invalidGrantIsExitOne() throws {
        try withSimulator { sim in
            let real = sim.simulator.fcmServiceAccount
            let other = try ServiceAccount(projectID: real.projectID, privateKeyID: real.privateKeyID, privateKeyPEM: try RSASigningKey.generate().pkcs8PEM,
                                           clientEmail: real.clientEmail, tokenURI: real.tokenURI)
            let path = writeFile(dir, "other.json", other.googleLayoutJSON(clientID: "1"))
            let run = send(sim, account: path, ["--data", "k=v"])
            #expect(run.code == .refused && run.err.contains("invalid_grant"), "\(run)")
            #expect(sim.counters.fcmAccepted == 0 && sim.counters.fcmRejected.isEmpty)
            // With --json, stdout says so as JSON too (it printed nothing; issue 35).
            let json = send(sim, account: path, ["--data", "k=v", "--json"])
            let answer = try JSONParser.parse(Array(json.out.utf8))
            #expect(json.code == .refused && answer["status"]?.int64Value == 0 && answer["failedAt"]?.stringValue == "accessToken", "\(json)")
            #expect(answer["reason"]?.stringValue?.contains("invalid_grant") == true && answer["name"] == .null, "\(json)")
        }
    }

    @Test("bench --provider fcm ends with every message delivered and one outcome each, in the APNs bench's report shape")
    func benchDeliversEveryMessage() throws {
        let run = ChildProcess.run(SimulatorProcessTests.binary, ["bench", "--provider", "fcm", "--pushes", "5000", "--connections", "2", "--json"])
        #expect(run.status == 0, "\(run.out)\(run.err)")
        let report = try JSONParser.parse(Array((run.out.split(separator: "\n").last.map(String.init) ?? "").utf8))
        let outcomes = report["outcomes"]?.objectMembers ?? []
        #expect(outcomes.reduce(0) { $0 + Int($1.value.int64Value ?? 0) } == 5000, "one outcome per message: \(run.out)")
        #expect(report["outcomes"]?["delivered"]?.int64Value == 5000, "\(run.out)")
        for key in ["pushesPerSecond", "cpuSecondsPer100k", "p50Ms", "p99Ms", "peakRssMB"] { #expect(report[key] != nil, "\(key)") }
        let refused = ChildProcess.run(SimulatorProcessTests.binary, ["bench", "--provider", "fcm", "--target", "https://127.0.0.1:1"])
        #expect(refused.status == 64 && refused.err.contains("--target"), "\(refused.err)")
    }
}

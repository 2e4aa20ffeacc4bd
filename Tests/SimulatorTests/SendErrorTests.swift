#if canImport(Glibc)
import Glibc
#endif
import Crypto
import JSONCore
import Simulator
import SokuhoCLI
import Testing

/// Every bad input a user can cause with `sokuho send`: the exit code the issue names and a message
/// that says what to fix. Each test also checks what the simulator saw (nothing, when the CLI
/// refused before sending).
@Suite struct SendErrorTests {
    let dir = temporaryDirectory()
    var update: [String] { ["send", "--token", deviceToken("a1"), "--payload", writeFile(dir, "update.json", updateBody())] }

    @Test func jsonOutputHasTheDocumentedShape() throws {
        try withSimulator { sim in
            let run = sim.run(update + ["--push-type", "liveactivity", "--apns-id", "0a1b2c3d-0000-4000-8000-00000000abcd", "--json"])
            #expect(run.code == .success, "\(run)")
            let answer = try JSONParser.parse(Array(run.line.utf8))
            #expect(answer.objectMembers?.map(\.key) == ["status", "apnsId", "apnsUniqueId", "reason"])
            #expect(answer["status"]?.int64Value == 200)
            #expect(answer["apnsId"]?.stringValue == "0a1b2c3d-0000-4000-8000-00000000abcd")
            #expect(answer["apnsUniqueId"]?.stringValue?.utf8.count == 36)
            #expect(answer["reason"] == .null)
            #expect(run.err.isEmpty)
        }
    }

    @Test func missingKeyFileIs66() throws {
        try withSimulator { sim in
            let run = sokuho(update + sim.connectionOptions(key: dir + "/AuthKey_NOPE.p8"))
            #expect(run.code == .noInput, "\(run)")
            #expect(run.err.contains("AuthKey_NOPE.p8"), "\(run)")
            #expect(sim.counters.connections == 0)
        }
    }

    @Test func garbageKeyFileIs65() throws {
        try withSimulator { sim in
            let key = writeFile(dir, "AuthKey_GARBAGE.p8", "-----BEGIN PRIVATE KEY-----\nbm90IGEga2V5\n-----END PRIVATE KEY-----\n")
            let run = sokuho(update + sim.connectionOptions(key: key))
            #expect(run.code == .dataError, "\(run)")
            #expect(run.err.contains("AuthKey_GARBAGE.p8"), "\(run)")
            #expect(sim.counters.connections == 0)
        }
    }

    @Test func aKeyOfAnotherTeamIsRefused() throws {
        try withSimulator { sim in
            // A valid key the simulator does not trust, under another team and key id.
            let key = dir + "/AuthKey_OTHERKEY01.p8"
            _ = try SigningKey.generateP8(at: key)
            let untrusted = sokuho(update + sim.connectionOptions(key: key, teamID: "OTHERTEAM1", keyID: "OTHERKEY01"))
            #expect(untrusted.code == .refused, "\(untrusted)")
            #expect(untrusted.out.contains("status 403"), "\(untrusted)")
            #expect(untrusted.err.contains("403 InvalidProviderToken: check --team-id, --key-id, --key"), "\(untrusted)")

            // The trusted key claimed by another team.
            let wrongTeam = sokuho(update + sim.connectionOptions(teamID: "OTHERTEAM1"))
            #expect(wrongTeam.code == .refused, "\(wrongTeam)")
            #expect(wrongTeam.err.contains("InvalidProviderToken"), "\(wrongTeam)")
            #expect(sim.counters.rejected["InvalidProviderToken"] == 2)
            #expect(sim.counters.accepted == 0)
        }
    }

    @Test func anotherAppsTopicIsRefused() throws {
        try withSimulator({ $0.bundles = [testBundle] }) { sim in
            let run = sokuho(update + sim.connectionOptions(topic: "com.example.other") + ["--json"])
            #expect(run.code == .refused, "\(run)")
            let answer = try JSONParser.parse(Array(run.line.utf8))
            #expect(answer["status"]?.int64Value == 400)
            #expect(answer["reason"]?.stringValue == "TopicDisallowed")
            #expect(sim.counters.accepted == 0)
        }
    }

    @Test func anOversizedPayloadIs65BeforeSending() throws {
        try withSimulator { sim in
            let prefix = #"{"aps":{"alert":"x"},"pad":""#
            let padding = String(repeating: "p", count: 4097 - prefix.utf8.count - 2)
            let payload = writeFile(dir, "big.json", prefix + padding + "\"}")
            #expect(readFile(payload).count == 4097)
            let run = sim.run(["send", "--token", deviceToken("a2"), "--payload", payload])
            #expect(run.code == .dataError, "\(run)")
            #expect(run.err.contains("4097") && run.err.contains("4096"), "\(run)")
            #expect(sim.counters.connections == 0)
        }
    }

    @Test func anUnknownChannelIsRefused() throws {
        try withSimulator { sim in
            let state = writeFile(dir, "state.json", #"{"intensity":3}"#)
            let run = sim.run(["send", "--channel", "AAAAAAAAAAAAAAAAAAAAAAAA", "--event", "update", "--content-state", state])
            #expect(run.code == .refused, "\(run)")
            #expect(run.out.contains("status 400"), "\(run)")
            #expect(run.err.contains("400 ChannelNotRegistered: the channel does not exist"), "\(run)")
        }
    }

    @Test func aServerThatIsGoneIs69() throws {
        let options = try withSimulator { sim in sim.connectionOptions() }
        // The simulator has stopped: its port refuses connections.
        let run = sokuho(update + options)
        #expect(run.code == .unavailable, "\(run)")
        #expect(run.err.contains("127.0.0.1"), "\(run)")
    }

    /// A server that accepts TCP but never completes TLS: `--timeout` ends the wait with 69.
    @Test func aServerThatNeverAnswersTimesOutWith69() throws {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(listener) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        try withUnsafeMutablePointer(to: &address) { pointer in
            try pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { raw in
                try #require(bind(listener, raw, length) == 0 && listen(listener, 4) == 0 && getsockname(listener, raw, &length) == 0)
            }
        }
        let port = Int(UInt16(bigEndian: address.sin_port))
        let run = sokuho(update + ["--timeout", "0.3", "--host", "127.0.0.1:\(port)", "--ca-file", sharedCertificates.ca,
                                   "--key", sharedCertificates.providerKey, "--team-id", SimulatorCertificates.teamID,
                                   "--key-id", SimulatorCertificates.keyID, "--topic", testBundle])
        #expect(run.code == .unavailable, "\(run)")
        #expect(run.err.contains("timed out"), "\(run)")
    }

    /// The simulator holds its answer longer than `--timeout`: the push was sent, its outcome is
    /// unknown, and the message says so.
    @Test func anAnswerLaterThanTheTimeoutIs69() throws {
        try withSimulator({ $0.latency = .nanoseconds(30_000_000_000) }) { sim in
            // One second leaves the TLS handshake ample time even on a busy machine.
            let run = sim.run(update + ["--timeout", "1"])
            #expect(run.code == .unavailable, "\(run)")
            #expect(run.err.contains("deadline passed after sending"), "\(run)")
        }
    }

    @Test func aCertificateFromAnotherCAIs69() throws {
        let otherCA = try LoopbackCertificates.generate(in: temporaryDirectory("sokuho-otherca")).caCertificatePath
        try withSimulator { sim in
            let run = sokuho(update + sim.connectionOptions(caFile: otherCA))
            #expect(run.code == .unavailable, "\(run)")
            #expect(run.err.lowercased().contains("certificate"), "\(run)")
            #expect(sim.counters.accepted == 0)
        }
    }

    @Test func usageErrorsAre64() {
        let both = sokuho(["send", "--token", deviceToken("a3"), "--channel", "AAAAAAAAAAAAAAAAAAAAAAAA", "--event", "update",
                           "--topic", testBundle])
        #expect(both.code == .usage, "\(both)")
        #expect(both.err.contains("--token") && both.err.contains("--channel"), "\(both)")
        let neither = sokuho(["send", "--event", "update", "--topic", testBundle])
        #expect(neither.code == .usage, "\(neither)")
        let unknown = sokuho(["send", "--tokken", deviceToken("a3")])
        #expect(unknown.code == .usage, "\(unknown)")
        let state = writeFile(dir, "state-usage.json", #"{"intensity":3}"#)
        let collapsedBroadcast = sokuho(["send", "--channel", "AAAAAAAAAAAAAAAAAAAAAAAA", "--event", "update", "--content-state", state,
                                         "--collapse-id", "x", "--topic", testBundle])
        #expect(collapsedBroadcast.code == .usage, "\(collapsedBroadcast)")
        #expect(collapsedBroadcast.err.contains("--collapse-id"), "\(collapsedBroadcast)")
        let ignoredShortcut = sokuho(["send", "--token", deviceToken("a3"), "--payload", state, "--alert-title", "Quake",
                                      "--topic", testBundle])
        #expect(ignoredShortcut.code == .usage, "\(ignoredShortcut)")
        #expect(ignoredShortcut.err.contains("--alert-title"), "\(ignoredShortcut)")
    }

    @Test func anInvalidTokenIs65BeforeSending() {
        let state = writeFile(dir, "state.json", #"{"intensity":3}"#)
        let run = sokuho(["send", "--token", "xyz", "--event", "update", "--content-state", state, "--topic", testBundle])
        #expect(run.code == .dataError, "\(run)")
        #expect(run.err.contains("--token"), "\(run)")
    }
}

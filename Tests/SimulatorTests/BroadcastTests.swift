import Crypto
import JSONCore
import Simulator
import SokuhoCLI
import Testing
import Vocabulary

/// Broadcast pushes through `sokuho send --channel`: the storage-policy rule on `apns-expiration`,
/// and the request identity APNs answers broadcasts with.
@Suite struct BroadcastTests {
    let dir = temporaryDirectory()
    var state: String { writeFile(dir, "state.json", #"{"intensity":4}"#) }

    @Test func aStoredExpirationNeedsAMostRecentMessageStoredChannel() throws {
        try withSimulator { sim in
            let noStorage = sim.run(["channels", "create", "--storage-policy", "0"]).line
            let stored = sim.run(["channels", "create", "--storage-policy", "1"]).line
            let later = String(WallClock.seconds() + 600)

            let refused = sim.run(["send", "--channel", noStorage, "--event", "update", "--content-state", state, "--expiration", later])
            #expect(refused.code == .refused, "\(refused)")
            #expect(refused.err.contains("BadExpirationDate"), "\(refused)")
            let immediate = sim.run(["send", "--channel", noStorage, "--event", "update", "--content-state", state, "--expiration", "0"])
            #expect(immediate.code == .success, "\(immediate)")
            let kept = sim.run(["send", "--channel", stored, "--event", "update", "--content-state", state, "--expiration", later])
            #expect(kept.code == .success, "\(kept)")
            #expect(sim.counters.accepted == 2)
            #expect(sim.counters.rejected == ["BadExpirationDate": 1])
        }
    }

    /// APNs answers a broadcast with apns-request-id (echoed) and apns-unique-id, not apns-id; `--json`
    /// reports the request id in `apnsId`, refusals included.
    @Test func broadcastsAreIdentifiedByTheirRequestID() throws {
        try withSimulator { sim in
            let channel = sim.run(["channels", "create"]).line
            let id = "0a1b2c3d-0000-4000-8000-0000000000b1"
            let sent = sim.run(["send", "--channel", channel, "--event", "update", "--content-state", state, "--apns-id", id, "--json"])
            #expect(sent.code == .success, "\(sent)")
            let answer = try JSONParser.parse(Array(sent.line.utf8))
            #expect(answer["apnsId"]?.stringValue == id)
            #expect(answer["apnsUniqueId"]?.stringValue?.utf8.count == 36)

            let unknown = sim.run(["send", "--channel", "AAAAAAAAAAAAAAAAAAAAAAAA", "--event", "end", "--content-state", state,
                                   "--apns-id", id, "--json"])
            #expect(unknown.code == .refused, "\(unknown)")
            let refusal = try JSONParser.parse(Array(unknown.line.utf8))
            #expect(refusal["apnsId"]?.stringValue == id)
            #expect(refusal["reason"]?.stringValue == "ChannelNotRegistered")
        }
    }
}

/// `send --channel` with flags that restate or contradict what a broadcast implies.
@Suite struct BroadcastRestatedFlagTests {
    let dir = temporaryDirectory()
    var state: String { writeFile(dir, "state.json", #"{"intensity":4}"#) }

    @Test("--push-type liveactivity restates what --channel implies and is accepted; another push type or --collapse-id contradicts it: 64")
    func restatingIsAcceptedContradictingIsAUsageError() throws {
        try withSimulator { sim in
            let channel = sim.run(["channels", "create"]).line
            for spelling in ["liveactivity", "LiveActivity"] {
                let restated = sim.run(["send", "--channel", channel, "--event", "update", "--content-state", state, "--push-type", spelling])
                #expect(restated.code == .success, "\(restated)")
            }
            let contradicted = sim.run(["send", "--channel", channel, "--event", "update", "--content-state", state, "--push-type", "alert"])
            #expect(contradicted.code == .usage, "\(contradicted)")
            #expect(contradicted.err.contains("--push-type alert contradicts --channel"), "\(contradicted)")
            let collapsed = sim.run(["send", "--channel", channel, "--event", "update", "--content-state", state, "--collapse-id", "q"])
            #expect(collapsed.code == .usage, "\(collapsed)")
            #expect(collapsed.err.contains("--collapse-id does not apply to a broadcast"), "\(collapsed)")
            #expect(sim.counters.accepted == 2)
        }
    }
}

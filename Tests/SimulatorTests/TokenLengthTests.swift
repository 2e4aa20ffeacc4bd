import APNs
import Testing
import Vocabulary

/// One bound on an APNs token's length (`DeviceToken.apnsByteCount`, 1...100 bytes) for every way a token
/// comes in: a token `send` pushes to is one `tokens import` stores, and the other way round.
@Suite struct TokenLengthTests {
    /// A token of `bytes` bytes in hex, distinct per `fill`.
    func token(bytes: Int, fill: String = "ab") -> String { String(repeating: fill, count: bytes) }

    func importLine(_ token: String) -> String {
        #"{"installationId":"i1","app":"com.example.eew","environment":"sandbox","kind":"pushToStart","token":"\#(token)","topics":[{"name":"region:301","minLevel":3}]}"#
    }

    @Test("the bound is 100 bytes, and DeviceToken takes 100 bytes and refuses 101 naming the bound")
    func theParserTakesOneHundredBytes() throws {
        #expect(DeviceToken.apnsByteCount.upperBound == 100)
        #expect(try DeviceToken(hex: token(bytes: 100)).hex.utf8.count == 200)
        do {
            _ = try DeviceToken(hex: token(bytes: 101))
            Issue.record("a 101-byte token was accepted")
        } catch {
            #expect(error.description.contains("at most 100 bytes"), "\(error)")
            #expect(error.reason == .badDeviceToken)
        }
    }

    @Test("send --token takes a 100-byte token to the simulator and refuses a 101-byte one with 65 naming the bound")
    func sendUsesTheSameBound() throws {
        let payload = writeFile(temporaryDirectory(), "update.json", updateBody())
        try withSimulator { sim in
            let accepted = sim.run(["send", "--token", token(bytes: 100, fill: "c7"), "--payload", payload, "--push-type", "liveactivity"])
            #expect(accepted.code == .success, "\(accepted)")
            let refused = sim.run(["send", "--token", token(bytes: 101, fill: "c8"), "--payload", payload, "--push-type", "liveactivity"])
            #expect(refused.code == .dataError, "\(refused)")
            #expect(refused.err.contains("at most 100 bytes"), "\(refused)")
            #expect(!refused.err.contains(token(bytes: 20, fill: "c8")), "a token is never echoed whole: \(refused)")
            #expect(sim.counters.accepted == 1)
        }
    }

    @Test("tokens import stores a 100-byte token and refuses a 101-byte one naming the bound")
    func importUsesTheSameBound() {
        let directory = temporaryDirectory("sokuho-tokenlength")
        let good = writeFile(directory, "good.jsonl", importLine(token(bytes: 100)) + "\n")
        let bad = writeFile(directory, "bad.jsonl", importLine(token(bytes: 101)) + "\n")
        let stored = sokuho(["tokens", "import", good, "--store", directory + "/store"])
        #expect(stored.code == .success, "\(stored)")
        #expect(stored.out.contains("imported 1 of 1"), "\(stored)")
        let refused = sokuho(["tokens", "import", bad, "--store", directory + "/store"])
        #expect(refused.code == .dataError, "\(refused)")
        #expect(refused.err.contains("101 bytes"), "\(refused)")
        #expect(refused.err.contains("...100 bytes"), "\(refused)")
    }
}

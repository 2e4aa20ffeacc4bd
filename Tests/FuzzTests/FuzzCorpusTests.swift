import APNs
import FuzzTargets
import Testing

/// Every input under Tests/FuzzCorpus/<target>/ — the hand-written seeds and the inputs of past
/// findings (named `finding-…`) — runs through its fuzz target in the ordinary test build, so a
/// regression fails `swift test` without libFuzzer or sanitizers (Toolchain/fuzz does the fuzzing).
@Suite struct FuzzCorpusTests {
    /// Tests/FuzzCorpus, found from this file (Tests/FuzzTests/FuzzCorpusTests.swift).
    static let corpusRoot = "/" + #filePath.split(separator: "/").dropLast(2).joined(separator: "/") + "/FuzzCorpus"

    @Test(arguments: FuzzTargets.all.map(\.name))
    func corpusReplays(target name: String) throws {
        let target = try #require(FuzzTargets.named(name))
        let files = FuzzTargets.files(at: Self.corpusRoot + "/" + name)
        #expect(files.count >= 2, "Tests/FuzzCorpus/\(name) holds the seeds")
        for file in files {
            let bytes = try #require(FuzzTargets.read(file), "cannot read \(file)")
            bytes.withUnsafeBytes { target.run($0) }
        }
    }

    /// The replicated-write seeds are accepted encodings, so fuzzing starts past the version and tags.
    @Test func replicatedWriteSeedsDecode() throws {
        let seeds = [("seed-remove-installation.bin", 1), ("seed-register-and-remove-token.bin", 2)]
        for (name, count) in seeds {
            let bytes = try #require(FuzzTargets.read(Self.corpusRoot + "/replicated-write/" + name))
            #expect(FuzzTargets.replicatedOperationCount(bytes) == count, "\(name)")
        }
    }

    /// The HTTP/2 seeds are frames a client session accepts, so fuzzing starts from real answers.
    @Test func http2SeedsReachTheResponseAndTheGoAway() throws {
        func answer(_ name: String) throws -> (response: Response?, goAwayReason: Reason?) {
            let bytes = try #require(FuzzTargets.read(Self.corpusRoot + "/http2-response/" + name))
            return bytes.withUnsafeBytes { FuzzTargets.http2Answer($0) }
        }
        let refused = try answer("seed-400.bin").response
        #expect(refused?.status == 400)
        #expect(refused?.reason == Reason("BadDeviceToken"))
        #expect(refused?.apnsID == "77DD8B17-8E56-4A8D-9C0A-6A5A1B3F7B0C")
        #expect(try answer("seed-200.bin").response?.status == 200)
        #expect(try answer("seed-goaway.bin").goAwayReason == Reason("ExpiredProviderToken"))
    }
}

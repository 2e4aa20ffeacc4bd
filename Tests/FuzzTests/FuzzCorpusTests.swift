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
}

#if canImport(Glibc)
import Glibc
#endif
import JSONCore
import Testing

/// The built `sokuho simulator` binary as a user runs it: the start line, then a clean end with its
/// summary on SIGTERM (a service manager) or SIGINT (Ctrl-C).
@Suite struct SimulatorProcessTests {
    /// `.build/debug/sokuho` of this package (built by `swift build --build-tests`).
    static var binary: String {
        var parts = #filePath.split(separator: "/", omittingEmptySubsequences: false)
        parts.removeLast(3)  // Tests/SimulatorTests/<file>
        return parts.joined(separator: "/") + "/.build/debug/sokuho"
    }

    @Test(arguments: [SIGTERM, SIGINT])
    func endsCleanlyOnASignalWithItsSummary(signal: Int32) throws {
        try #require(access(Self.binary, X_OK) == 0, "build the binary first: swift build (\(Self.binary))")
        let certDir = temporaryDirectory("sokuho-proc") + "/certs"
        let child = ChildProcess(Self.binary, ["simulator", "--cert-dir", certDir, "--duration", "60"])
        let firstLine = child.readLine()
        guard let firstLine, let start = try? JSONParser.parse(Array(firstLine.utf8)) else {
            kill(child.pid, SIGKILL)
            _ = child.wait()
            Issue.record("no start line; stderr: \(child.stderr)")
            return
        }
        let port = try #require(start["port"]?.int64Value)
        let managePort = try #require(start["managePort"]?.int64Value)
        #expect(start["caFile"]?.stringValue == certDir + "/ca.pem")
        #expect(start["keyFile"]?.stringValue == certDir + "/AuthKey_SIMKEY0001.p8")
        #expect(start["teamId"]?.stringValue == "SOKUHOTEAM")
        #expect(start["keyId"]?.stringValue == "SIMKEY0001")

        // One push through the CLI, with exactly what the start line says.
        let payload = writeFile(temporaryDirectory(), "update.json", updateBody())
        let push = sokuho(["send", "--token", deviceToken("f1"), "--payload", payload, "--push-type", "liveactivity",
                           "--host", "127.0.0.1:\(port)", "--manage-host", "127.0.0.1:\(managePort)",
                           "--ca-file", certDir + "/ca.pem", "--key", certDir + "/AuthKey_SIMKEY0001.p8",
                           "--team-id", "SOKUHOTEAM", "--key-id", "SIMKEY0001", "--topic", testBundle])
        #expect(push.code == .success, "\(push)")

        #expect(kill(child.pid, signal) == 0)
        #expect(child.wait() == 0)
        #expect(child.stderr.contains("simulator: accepted 1, rejected 0"), "stderr: \(child.stderr)")
    }

    /// `--payload -` reads the body from standard input, byte for byte.
    @Test func thePayloadCanComeFromStandardInput() throws {
        try #require(access(Self.binary, X_OK) == 0, "build the binary first: swift build (\(Self.binary))")
        let dir = temporaryDirectory()
        let logPath = dir + "/pushes.jsonl"
        let body = updateBody()
        let payload = writeFile(dir, "update.json", body)
        try withSimulator({ $0.logPath = logPath }) { sim in
            let run = ChildProcess.run(Self.binary, ["send", "--token", deviceToken("f2"), "--payload", "-", "--push-type", "liveactivity"]
                                       + sim.connectionOptions(), stdin: payload)
            #expect(run.status == 0, "\(run.err)")
            #expect(run.out.hasPrefix("status 200"), "\(run.out)")
            #expect(String(decoding: readFile(logPath), as: UTF8.self).contains(",\"body\":" + String(decoding: body, as: UTF8.self) + "}"))
        }
    }
}

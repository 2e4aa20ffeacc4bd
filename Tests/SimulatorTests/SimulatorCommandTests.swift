import SokuhoCLI
import Testing

/// `sokuho simulator` errors, found before it would wait for a signal (so they run in-process).
@Suite struct SimulatorCommandTests {
    @Test(arguments: [
        (["--fail", "InternalServerError"], "--fail"),
        (["--fail", "InternalServerError=2"], "--fail"),
        (["--unregistered", "not-hex"], "--unregistered"),
        (["--unregistered", String(repeating: "ab", count: 31) + "zz"], "'z' at byte 63"),
        (["--port", "70000"], "--port"),
        (["--stall-after", "0"], "--stall-after"),
        (["--token-scope", "team"], "--token-scope"),
    ])
    func invalidOptionValuesAre65(arguments: [String], option: String) {
        let run = sokuho(["simulator"] + arguments)
        #expect(run.code == .dataError, "\(run)")
        #expect(run.err.contains(option), "\(run)")
        #expect(!run.err.contains("abababababab"), "a device token is never quoted whole: \(run)")
        #expect(run.out.isEmpty)
    }

    @Test("--goaway-reason without --goaway-after is a usage error: alone it would change nothing")
    func aGoAwayReasonWithoutGoAwayIs64() {
        let run = sokuho(["simulator", "--goaway-reason", "Shutdown"])
        #expect(run.code == .usage, "\(run)")
        #expect(run.err.contains("--goaway-reason needs --goaway-after"), "\(run)")
        #expect(run.out.isEmpty)
    }

    @Test func aCertificateDirectoryThatCannotBeCreatedIs73() {
        let run = sokuho(["simulator", "--cert-dir", "/proc/sokuho-no-such-dir/certs"])
        #expect(run.code == .cantCreate, "\(run)")
        #expect(run.err.contains("/proc/sokuho-no-such-dir/certs"), "\(run)")
    }

    @Test func aLogThatCannotBeWrittenIs73() {
        let certs = sharedCertificates.directory
        let run = sokuho(["simulator", "--cert-dir", certs, "--log", "/proc/sokuho-no-such-dir/pushes.jsonl"])
        #expect(run.code == .cantCreate, "\(run)")
        #expect(run.err.contains("--log /proc/sokuho-no-such-dir/pushes.jsonl"), "\(run)")
        #expect(run.out.isEmpty)
    }

    @Test func aPortInUseIs69AndNamesIt() throws {
        try withSimulator { sim in
            let run = sokuho(["simulator", "--cert-dir", sharedCertificates.directory, "--port", String(sim.port)])
            #expect(run.code == .unavailable, "\(run)")
            #expect(run.err.contains("127.0.0.1:\(sim.port)"), "\(run)")
        }
    }
}

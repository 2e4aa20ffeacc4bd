import SokuhoCLI
import Testing

/// `sokuho simulator` option errors, found before anything listens (so they run in-process).
@Suite struct SimulatorCommandTests {
    @Test(arguments: [
        (["--fail", "InternalServerError"], "--fail"),
        (["--fail", "InternalServerError=2"], "--fail"),
        (["--unregistered", "not-hex"], "--unregistered"),
        (["--port", "70000"], "--port"),
    ])
    func invalidOptionValuesAre65(arguments: [String], option: String) {
        let run = sokuho(["simulator"] + arguments)
        #expect(run.code == .dataError, "\(run)")
        #expect(run.err.contains(option), "\(run)")
        #expect(run.out.isEmpty)
    }

    @Test func aCertificateDirectoryThatCannotBeCreatedIs73() {
        let run = sokuho(["simulator", "--cert-dir", "/proc/sokuho-no-such-dir/certs"])
        #expect(run.code == .cantCreate, "\(run)")
        #expect(run.err.contains("/proc/sokuho-no-such-dir/certs"), "\(run)")
    }
}

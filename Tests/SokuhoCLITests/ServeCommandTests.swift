import Glibc
import Testing
@testable import SokuhoCLI

/// `sokuho serve --check-config` as a script and an operator see it: exit codes and output.
@Suite struct ServeCommandTests {
    @Test func checkConfigPrintsASummaryWithPathsButNoKeyMaterialAndExits0() throws {
        let fixture = try ServeConfigFixture()
        let config = fixture.configFile(fixture.json())
        let (code, out, err) = fixture.files.run(["serve", "--config", config, "--check-config"])
        #expect(code == .success, "\(err)")
        #expect(out.hasPrefix("configuration ok: 1 app, API on 127.0.0.1:8080\n"))
        #expect(out.contains("com.example.quake (production)") && out.contains(fixture.keyFile) && out.contains("/srv/sokuho"))
        #expect(out.contains("every 300 s") && out.contains("every 3600 s"))
        #expect(!out.contains("PRIVATE KEY") && !out.contains("s3cret-token"))
        // The tests run as root (CI): root reads every file, which the check says, on stderr.
        #expect(geteuid() != 0 || err.contains("checked as root") && err.contains("runuser -u sokuho -- sokuho serve --check-config"), "\(err)")
    }

    @Test func withoutConfigTheErrorPointsAtThePackagedFile() throws {
        let fixture = try ServeConfigFixture()
        let (code, _, err) = fixture.files.run(["serve", "--check-config"], environment: [:])
        #expect(code == .config)
        #expect(err.contains("no --config given; the package's configuration is /etc/sokuho/sokuho.json"), "\(err)")
    }

    @Test func checkConfigJSONTakesTheOverrides() throws {
        let fixture = try ServeConfigFixture()
        let config = fixture.configFile(fixture.json())
        let (code, out, _) = fixture.files.run(["serve", "--config", config, "--check-config", "--json", "--listen", "0.0.0.0:8080"],
                                               environment: ["SOKUHO_KEEPALIVE": "30"])
        #expect(code == .success)
        #expect(out.hasPrefix(#"{"apps":[{"bundleID":"com.example.quake","teamID":"TEAM000001""#))
        #expect(out.contains(#""listen":["0.0.0.0:8080"]"#) && out.contains(#""keepaliveSeconds":30"#))
    }

    @Test func anInvalidConfigurationExits78NamingTheField() throws {
        let fixture = try ServeConfigFixture()
        let config = fixture.configFile(fixture.json(extra: #", "listen": ["127.0.0.1:99999"]"#))
        let (code, out, err) = fixture.files.run(["serve", "--config", config, "--check-config"])
        #expect(code == .config)
        #expect(out.isEmpty)
        #expect(err.hasPrefix("sokuho serve: \(config): listen[0]: must be HOST:PORT"))
        let valid = fixture.configFile(fixture.json())
        let (flagCode, _, flagErr) = fixture.files.run(["serve", "--config", valid, "--check-config", "--keepalive", "0"])
        #expect(flagCode == .config && flagErr.contains("--keepalive: must be a whole number of seconds"))
    }

    @Test func anInvalidValueIsPrintedAfterTheCommandAndTheFilesPath() throws {
        let fixture = try ServeConfigFixture()
        let config = fixture.configFile(fixture.json(extra: #", "statusPage": "yes""#))
        let (code, _, err) = fixture.files.run(["serve", "--config", config, "--check-config"])
        #expect(code == .config)
        #expect(err == "sokuho serve: \(config): statusPage: must be true or false\n")
    }

    @Test func aMissingConfigurationFileExits66() throws {
        let fixture = try ServeConfigFixture()
        let (code, _, err) = fixture.files.run(["serve", "--config", fixture.files.directory + "/nope.json", "--check-config"])
        #expect(code == .noInput)
        #expect(err.contains("nope.json"))
    }

    @Test func aDaemonThatCannotListenRefusesToStartNamingTheAddress() throws {
        let fixture = try ServeConfigFixture()
        // 192.0.2.1 (TEST-NET-1) is no address of this machine: the bind fails before any pool
        // connects anywhere.
        let (code, _, err) = fixture.files.run(["serve", "--config", fixture.configFile(fixture.json()), "--store", fixture.files.directory + "/store",
                                                "--listen", "192.0.2.1:8080"])
        #expect(code == .config)
        #expect(err.contains("192.0.2.1:8080"), "\(err)")
    }

    @Test func serveHelpListsEveryOverrideWithItsVariable() {
        let (code, out, _) = CLIFixture().run(["serve", "--help"])
        #expect(code == .success)
        for variable in ["SOKUHO_CONFIG", "SOKUHO_STORE", "SOKUHO_LISTEN", "SOKUHO_ADMIN_TOKEN_FILE", "SOKUHO_KEEPALIVE", "SOKUHO_APPS"] {
            #expect(out.contains("[env \(variable)]"), "\(variable)")
        }
    }
}

import APNs
import Glibc
@testable import SokuhoCLI
import Testing
import TokenStore

/// Installations whose id the HTTP API cannot address (issue 24): an id with "/" registered before
/// the API refused it. `store check` lists them with the command that removes each, and
/// `tokens remove` is that command.
@Suite struct UnaddressableInstallationTests {
    static let app = "com.example.eew"

    /// Registers `ids` straight into the store, as an old daemon or import did: nothing on this
    /// path refuses an id the API cannot address.
    static func storeWith(_ ids: [String], in fixture: CLIFixture) throws {
        let store = try TokenStore(directory: fixture.store)
        defer { store.close() }
        let operations = ids.enumerated().map { index, id in
            WriteOperation.register(TokenRegistration(installationID: id, app: app, environment: .sandbox, kind: .pushToStart,
                                                      token: [UInt8](repeating: UInt8(index + 1), count: 32),
                                                      topics: [TopicSubscription(name: "region:301", minLevel: 3)]),
                                    at: 1_717_000_000_000)
        }
        _ = try store.write(operations)
    }

    @Test func anInstallationIdTheAPICouldNeverAddressIsABadLine() {
        let fixture = CLIFixture()
        let input = fixture.file("in.jsonl", [TokensCommandTests.line("a/b", token: TokensCommandTests.token(1)), TokensCommandTests.line("..", token: TokensCommandTests.token(2)),
                                              TokensCommandTests.line("ok", token: TokensCommandTests.token(3))].joined(separator: "\n"))
        let (code, out, err) = fixture.run(["tokens", "import", input, "--store", fixture.store])
        #expect(code == .dataError)
        #expect(out == "imported 1 of 3 lines (2 bad)\n")
        #expect(err.contains("line 1: installationId must not contain '/' or be '.' or '..': it is a segment of /v1/installations/{id}"), "\(err)")
        #expect(err.contains("line 2: installationId must not contain"))
    }

    @Test func storeCheckListsAnIdWithASlashWithTheCommandThatRemovesItAndStillExitsZero() throws {
        let fixture = CLIFixture()
        try Self.storeWith(["ok-1", "phone/1", "it's a/b"], in: fixture)
        let (code, out, err) = fixture.run(["store", "check", "--store", fixture.store])
        #expect(code == .success)
        #expect(out == "ok: schema 6 (current 6), 3 installations, 2 the API cannot address (see above), 3 tokens, 3 topic entries\n")
        #expect(err.contains("warning: 2 installations have ids the HTTP API cannot address (must not contain '/' or be '.' or '..')"))
        // Key order; the shell quoting is what makes the line pasteable.
        #expect(err.contains("\n  sokuho tokens remove --store \(fixture.store) --installation-id 'it'\\''s a/b'\n"))
        #expect(err.hasSuffix("\n  sokuho tokens remove --store \(fixture.store) --installation-id phone/1\n"))
        #expect(!err.contains("ok-1"))
    }

    @Test func runningTheListedCommandsRemovesThemAndStoreCheckIsThenClean() throws {
        let fixture = CLIFixture()
        try Self.storeWith(["ok-1", "phone/1", "it's a/b", ".."], in: fixture)
        let commands = fixture.run(["store", "check", "--store", fixture.store]).2
            .split(separator: "\n").filter { $0.hasPrefix("  sokuho tokens remove ") }
        #expect(commands.count == 3)
        // Through a real shell and the built binary, exactly as an operator pastes them.
        for command in commands {
            let line = CLIFixture.binary + command.dropFirst("  sokuho".count) + " >/dev/null"
            #expect(CLIFixture.shell(line) == 0, "\(command)")
        }
        let (code, out, err) = fixture.run(["store", "check", "--store", fixture.store])
        #expect(code == .success)
        #expect(out == "ok: schema 6 (current 6), 1 installations, 1 tokens, 1 topic entries\n")
        #expect(err.isEmpty)
        #expect(fixture.run(["tokens", "export", "--store", fixture.store]).1.contains(#""installationId":"ok-1""#))
    }

    @Test func storeCheckJSONCountsAndListsTheIds() throws {
        let fixture = CLIFixture()
        try Self.storeWith(["a/b", "."], in: fixture)
        let (code, out, _) = fixture.run(["store", "check", "--json", "--store", fixture.store])
        #expect(code == .success)
        #expect(out.hasPrefix(#"{"ok":true,"#))
        #expect(out.hasSuffix(#""problems":[],"unaddressableInstallations":2,"unaddressableInstallationIds":[".","a/b"]}"# + "\n"))
    }

    @Test func tokensRemoveSaysWhatItDidAndAnUnknownIdIsExitOneWithNothingChanged() throws {
        let fixture = CLIFixture()
        try Self.storeWith(["a/b", "c"], in: fixture)
        let (missing, _, missingErr) = fixture.run(["tokens", "remove", "--installation-id", "nope", "--store", fixture.store])
        #expect(missing == .refused)
        #expect(missingErr.contains("no installation nope in \(fixture.store); nothing was changed"))
        let (code, out, _) = fixture.run(["tokens", "remove", "--installation-id", "a/b", "--json", "--store", fixture.store])
        #expect(code == .success)
        #expect(out == #"{"installationId":"a/b","removed":true}"# + "\n")
        #expect(fixture.run(["tokens", "remove", "--installation-id", "a/b", "--json", "--store", fixture.store]).1
            == #"{"installationId":"a/b","removed":false}"# + "\n")
        #expect(fixture.run(["store", "check", "--store", fixture.store]).1 == "ok: schema 6 (current 6), 1 installations, 1 tokens, 1 topic entries\n")
    }

    @Test func tokensRemoveNamesTheFlagWhenTheIdIsMissingOrCannotBeStored() {
        let fixture = CLIFixture()
        let (usage, _, usageErr) = fixture.run(["tokens", "remove", "--store", fixture.store])
        #expect(usage == .usage)
        #expect(usageErr.contains("--installation-id"))
        let (data, _, dataErr) = fixture.run(["tokens", "remove", "--installation-id", "a\u{1}b", "--store", fixture.store])
        #expect(data == .dataError)
        #expect(dataErr.contains("--installation-id contains a control character"))
        #expect(fixture.run(["tokens", "remove", "--installation-id", "x", "--store", fixture.store]).0 == .noInput)
    }

    @Test func anIdIsPrintedAsOneShellWordWithoutRawControlCharacters() {
        #expect(ShellWord.quoted("phone-1/a.b") == "phone-1/a.b")
        #expect(ShellWord.quoted("a b") == "'a b'")
        #expect(ShellWord.quoted("it's") == #"'it'\''s'"#)
        #expect(ShellWord.quoted("") == "''")
        #expect(ShellWord.quoted("a\u{1B}[2J'\\") == #"$'a\x1b[2J\'\\'"#)
    }

    @Test func theDaemonAndTheStoreShareOneRuleForAddressableIds() {
        for id in ["a/b", "/", ".", "..", "a/"] { #expect(!StoreLimits.isAddressableInstallationID(id), "\(id)") }
        for id in ["a", "...", ".a", "a.b", "a%2Fb", "a\\b"] { #expect(StoreLimits.isAddressableInstallationID(id), "\(id)") }
    }
}

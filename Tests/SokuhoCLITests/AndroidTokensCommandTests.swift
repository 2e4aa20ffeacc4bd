import Testing
@testable import SokuhoCLI

/// `sokuho tokens …` with Android installations: generated, imported into a new store (through
/// its working copy) and an existing one, counted, exported byte for byte.
@Suite struct AndroidTokensCommandTests {
    static func isFCMText(_ token: Substring) -> Bool {
        (152...163).contains(token.count) && token.contains(":APA91b")
            && token.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || "_:-".contains($0)) }
    }

    @Test func generateWithPlatformAndroidWritesFCMLinesWithFirebaseShapedTokens() throws {
        let fixture = CLIFixture()
        let (code, generated, _) = fixture.run(["tokens", "generate", "--platform", "android", "--count", "50", "--seed", "3"])
        #expect(code == .success)
        let lines = generated.split(separator: "\n")
        #expect(lines.count == 50 && lines.allSatisfy { $0.contains(#""kind":"fcm","token":""#) })
        let tokens = lines.map { line in line.split(separator: #""token":""#)[1].prefix { $0 != "\"" } }
        #expect(tokens.allSatisfy(Self.isFCMText), "\(tokens.first ?? "")")
        #expect(Set(tokens).count == 50 && Set(tokens.map(\.count)).count > 1)
        // Deterministic per seed, and iOS output unchanged by the new option's default.
        #expect(fixture.run(["tokens", "generate", "--platform", "android", "--count", "50", "--seed", "3"]).1 == generated)
        #expect(fixture.run(["tokens", "generate", "--count", "5"]).1 == fixture.run(["tokens", "generate", "--platform", "ios", "--count", "5"]).1)
        let refused = fixture.run(["tokens", "generate", "--platform", "android", "--kind", "device"])
        #expect(refused.0 == .usage && refused.2.contains("--kind is for iOS tokens"))
        #expect(fixture.run(["tokens", "generate", "--help"]).1.contains("--platform PLATFORM"))
    }

    @Test func androidLinesGoThroughAFreshImportAndExportImportExportIsByteIdentical() throws {
        let fixture = CLIFixture()
        let android = fixture.run(["tokens", "generate", "--platform", "android", "--count", "200", "--topics", "3", "--levels", "4", "--seed", "5"]).1
        let ios = fixture.run(["tokens", "generate", "--count", "100", "--topics", "3", "--seed", "6"]).1
        // A new store: built in its working copy (DIR/.importing) and written packed.
        let input = fixture.file("in.jsonl", ios + android)
        #expect(fixture.run(["tokens", "import", input, "--store", fixture.store]).0 == .success)
        let (code, exported, _) = fixture.run(["tokens", "export", "--store", fixture.store])
        #expect(code == .success && exported.split(separator: "\n").count == 300)
        #expect(exported.split(separator: "\n").filter { $0.contains(#""kind":"fcm""#) }.count == 200)
        let second = fixture.directory + "/second"
        #expect(fixture.run(["tokens", "import", fixture.file("export.jsonl", exported), "--store", second]).0 == .success)
        #expect(fixture.run(["tokens", "export", "--store", second]).1 == exported)
        // Into the existing store again: a re-sync changes nothing.
        #expect(fixture.run(["tokens", "import", fixture.file("export2.jsonl", exported), "--store", second]).0 == .success)
        #expect(fixture.run(["tokens", "export", "--store", second]).1 == exported)
        #expect(fixture.run(["store", "check", "--store", second]).0 == .success)

        let stats = fixture.run(["tokens", "stats", "--json", "--store", second]).1
        #expect(stats.contains(#""installations":300,"totalTokens":300"#))
        #expect(stats.contains(#"{"app":"com.example.eew","environment":"sandbox","kind":"fcm","count":200}"#), "\(stats)")
        #expect(fixture.run(["tokens", "stats", "--store", second]).1.contains("com.example.eew sandbox fcm: 200"))
        let targets = fixture.run(["tokens", "targets", "--app", "com.example.eew", "--environment", "sandbox", "--topic", "region:0",
                                   "--json", "--store", second]).1
        #expect(targets.contains(#""device":0,"seconds":"#) && targets.contains(#""fcm":"#) && !targets.contains(#""fcm":0}"#), "\(targets)")
    }

    @Test func anImportMixingPlatformsOnOneInstallationFailsNamingIt() {
        let fixture = CLIFixture()
        let hex = TokensCommandTests.token(1)
        let fcm = "dGVzdA:APA91bH" + String(repeating: "k9-Lm_", count: 24)
        let input = fixture.file("in.jsonl", TokensCommandTests.line("phone", token: hex) + "\n"
                                 + TokensCommandTests.line("phone", token: fcm, kind: "fcm") + "\n")
        let (code, _, err) = fixture.run(["tokens", "import", input, "--store", fixture.store])
        #expect(code != .success)
        #expect(err.contains("installation 'phone' is an iOS installation (its tokens: pushToStart); fcm tokens belong to Android installations"), "\(err)")
        // A bad FCM token is a bad line, named by its field and the characters allowed.
        let bad = fixture.file("bad.jsonl", TokensCommandTests.line("droid", token: "abc.def", kind: "fcm") + "\n")
        let refused = fixture.run(["tokens", "import", bad, "--store", fixture.directory + "/other"])
        #expect(refused.0 == .dataError)
        #expect(refused.2.contains("line 1: token is not an FCM registration token (7 bytes); one is 1 to 255 characters of A-Z, a-z, 0-9, '_', ':' and '-'"), "\(refused.2)")
    }
}

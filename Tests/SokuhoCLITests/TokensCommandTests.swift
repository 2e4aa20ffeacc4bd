import Glibc
import Testing
@testable import SokuhoCLI

/// `sokuho tokens …` and `sokuho store …` as an operator and their scripts use them.
@Suite struct TokensCommandTests {
    static let hex = "5e5532fbeea293f80bc942ee9086c171b9b501d1d854bb7180021590ff0b4dc3"

    static func line(_ id: String, token: String = hex, kind: String = "pushToStart", topic: String = "region:301", level: Int = 3) -> String {
        #"{"installationId":"\#(id)","app":"com.example.eew","environment":"sandbox","kind":"\#(kind)","token":"\#(token)","topics":[{"name":"\#(topic)","minLevel":\#(level)}]}"#
    }

    /// A distinct 32-byte hex token per `n`.
    static func token(_ n: Int) -> String {
        let digits = Array("0123456789abcdef")
        return "a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718" + String((0..<16).map { digits[(n >> (60 - 4 * $0)) & 0xf] })
    }

    @Test func importReportsBadLinesByNumberAndImportsTheRest() {
        let fixture = CLIFixture()
        let input = fixture.file("in.jsonl", [
            Self.line("a", token: Self.token(1)),
            "{not json",
            "",
            Self.line("b", token: Self.token(2)).replacingOccurrences("sandbox", "staging"),
            Self.line("c", token: Self.token(3)),
        ].joined(separator: "\n") + "\n")
        let (code, out, err) = fixture.run(["tokens", "import", input, "--store", fixture.store])
        #expect(code == .dataError)
        #expect(out == "imported 2 of 4 lines (2 bad)\n")
        #expect(err.contains("line 2: expected a string in double quotes (column 2)"))
        #expect(err.contains(#"line 4: environment must be "production" or "sandbox", not "staging""#))
        #expect(err.contains("2 bad lines in \(input) skipped; the other 2 were imported"))
        let (_, stats, _) = fixture.run(["tokens", "stats", "--json", "--store", fixture.store])
        #expect(stats.contains(#""installations":2"#))

        let (jsonCode, json, _) = fixture.run(["tokens", "import", input, "--json", "--store", fixture.store])
        #expect(jsonCode == .dataError)
        #expect(json.hasPrefix(#"{"lines":4,"imported":2,"bad":2,"errors":[{"line":2,"message":"expected a string in double quotes (column 2)"}"#))
    }

    @Test func strictImportsNothingWhenALineIsBad() {
        let fixture = CLIFixture()
        let input = fixture.file("in.jsonl", Self.line("a", token: Self.token(1)) + "\n" + Self.line("b", token: "xyz") + "\n")
        let (code, _, err) = fixture.run(["tokens", "import", input, "--strict", "--store", fixture.store])
        #expect(code == .dataError)
        #expect(err.contains("line 2: token must be an even number of hex digits"))
        #expect(err.contains("nothing imported (--strict)"))
        let (statsCode, _, statsErr) = fixture.run(["tokens", "stats", "--store", fixture.store])
        #expect(statsCode == .noInput)
        #expect(statsErr.contains("no token store at \(fixture.store)"))
    }

    @Test func strictImportFromAPipeImportsWhatItChecked() {
        let fixture = CLIFixture()
        let input = fixture.file("in.jsonl", Self.line("a", token: Self.token(1)) + "\n" + Self.line("b", token: Self.token(2)) + "\n")
        // A path that is a pipe (as `<(zcat …)` gives) cannot be opened again for the second pass.
        let status = CLIFixture.shell("cat '\(input)' | '\(CLIFixture.binary)' tokens import /dev/stdin --strict --store '\(fixture.store)' >/dev/null")
        #expect(status == ExitCode.success.rawValue)
        let (_, stats, _) = fixture.run(["tokens", "stats", "--json", "--store", fixture.store])
        #expect(stats.contains(#""installations":2"#), "\(stats)")
        // A regular file is read again from its start.
        let second = fixture.directory + "/second"
        #expect(fixture.run(["tokens", "import", input, "--strict", "--store", second]).1 == "imported 2 of 2 lines (0 bad)\n")
    }

    @Test func exportThenImportRoundTripsExactly() {
        let fixture = CLIFixture()
        let (_, generated, _) = fixture.run(["tokens", "generate", "--count", "300", "--topics", "7", "--levels", "4", "--seed", "9"])
        #expect(generated.split(separator: "\n").count == 300)
        // One installation on iOS 18 with both kinds of token and two topics.
        let both = [
            #"{"installationId":"both","app":"com.example.eew","environment":"production","kind":"device","token":"\#(Self.token(5))","registeredAt":1700000000001,"broadcast":true,"topics":[{"name":"b","minLevel":0},{"name":"a","minLevel":2}]}"#,
            #"{"installationId":"both","app":"com.example.eew","environment":"production","kind":"pushToStart","token":"\#(Self.token(6))","registeredAt":0,"broadcast":true,"topics":[{"name":"b","minLevel":0},{"name":"a","minLevel":2}]}"#,
        ].joined(separator: "\n")
        // Two iOS 17 activities, out of id order.
        let activities = [
            #"{"activityId":"act-2","app":"com.example.eew","environment":"sandbox","eventKey":"eew-7","token":"\#(Self.token(8))","startedAt":1700000000000}"#,
            #"{"activityId":"act-1","app":"com.example.eew","environment":"production","eventKey":"eew-\u00e9","token":"\#(Self.token(7))","startedAt":0}"#,
        ]
        let input = fixture.file("in.jsonl", activities[0] + "\n" + generated + both + "\n" + activities[1] + "\n")
        #expect(fixture.run(["tokens", "import", input, "--store", fixture.store]).0 == .success)
        let (code, exported, _) = fixture.run(["tokens", "export", "--store", fixture.store])
        #expect(code == .success)
        #expect(exported.split(separator: "\n").count == 304)
        #expect(exported.contains(both.split(separator: "\n")[1] + "\n" + both.split(separator: "\n")[0]))
        // Activities come last, in id order (the escape written as the character it stands for).
        #expect(exported.hasSuffix(activities[1].replacingOccurrences(#"\u00e9"#, "é") + "\n" + activities[0] + "\n"), "\(exported.suffix(400))")
        let second = fixture.directory + "/second"
        let exportFile = fixture.file("export.jsonl", exported)
        #expect(fixture.run(["tokens", "import", exportFile, "--store", second]).0 == .success)
        #expect(fixture.run(["tokens", "export", "--store", second]).1 == exported)
        // Every exported token line says when its token was registered (the generated ones: at the import).
        #expect(exported.split(separator: "\n").dropLast(2).allSatisfy { $0.contains(#"","registeredAt":"#) })
    }

    @Test func aReSyncWithoutRegisteredAtKeepsTheStoredTime() {
        let fixture = CLIFixture()
        let timed = Self.line("a", token: Self.token(1)).replacingOccurrences(#","topics""#, #","registeredAt":1234,"topics""#)
        #expect(fixture.run(["tokens", "import", fixture.file("timed.jsonl", timed), "--store", fixture.store]).0 == .success)
        #expect(fixture.run(["tokens", "import", fixture.file("untimed.jsonl", Self.line("a", token: Self.token(1), level: 4)), "--store", fixture.store]).0 == .success)
        let (_, exported, _) = fixture.run(["tokens", "export", "--store", fixture.store])
        #expect(exported == timed.replacingOccurrences(#""minLevel":3"#, #""minLevel":4"#) + "\n")
    }

    @Test func aBadRegisteredAtIsReportedWithItsLineAndField() {
        let fixture = CLIFixture()
        let input = fixture.file("in.jsonl", [
            Self.line("a", token: Self.token(1)),
            Self.line("b", token: Self.token(2)).replacingOccurrences(#","topics""#, #","registeredAt":-5,"topics""#),
            Self.line("c", token: Self.token(3)).replacingOccurrences(#","topics""#, #","registeredAt":99999999999999,"topics""#),
        ].joined(separator: "\n") + "\n")
        let (code, out, err) = fixture.run(["tokens", "import", input, "--store", fixture.store])
        #expect(code == .dataError)
        #expect(out == "imported 1 of 3 lines (2 bad)\n")
        #expect(err.contains("line 2: registeredAt must be a whole number of milliseconds since 1970 (0 or more) (column "), "\(err)")
        #expect(err.contains("line 3: registeredAt (99999999999999 ms) is more than a day after now ("), "\(err)")
    }

    @Test func statsCountPerAppEnvironmentKindAndTopic() {
        let fixture = CLIFixture()
        let input = fixture.file("in.jsonl", [
            Self.line("a", token: Self.token(1), topic: "region:301"),
            Self.line("b", token: Self.token(2), topic: "region:301"),
            Self.line("c", token: Self.token(3), kind: "device", topic: "region:302"),
        ].joined(separator: "\n"))
        #expect(fixture.run(["tokens", "import", input], environment: ["SOKUHO_STORE": fixture.store]).0 == .success)
        let (code, json, _) = fixture.run(["tokens", "stats", "--json"], environment: ["SOKUHO_STORE": fixture.store])
        #expect(code == .success)
        #expect(json.contains(#""installations":3,"totalTokens":3"#))
        #expect(json.contains(#""tokens":[{"app":"com.example.eew","environment":"sandbox","kind":"pushToStart","count":2},{"app":"com.example.eew","environment":"sandbox","kind":"device","count":1}]"#))
        #expect(json.contains(#""topics":[{"app":"com.example.eew","environment":"sandbox","topic":"region:301","count":2},{"app":"com.example.eew","environment":"sandbox","topic":"region:302","count":1}]"#))
        let (_, text, _) = fixture.run(["tokens", "stats", "--store", fixture.store])
        #expect(text.contains("  com.example.eew sandbox region:301: 2\n"))
        // Both region:301 tokens have minLevel 3: a level-2 event reaches neither.
        let targets = ["tokens", "targets", "--app", "com.example.eew", "--environment", "sandbox", "--topic", "region:301", "--json", "--store", fixture.store]
        #expect(fixture.run(targets + ["--level", "3"]).1.hasPrefix(#"{"targets":2,"pushToStart":2,"device":0,"seconds":"#))
        #expect(fixture.run(targets + ["--level", "2"]).1.hasPrefix(#"{"targets":0,"#))
    }

    @Test func pruneSaysWhatItRemoved() {
        let fixture = CLIFixture()
        #expect(fixture.run(["tokens", "prune", "--store", fixture.store]).0 == .usage)
        #expect(fixture.run(["tokens", "prune", "--expired", "--store", fixture.store]).0 == .noInput)
        _ = fixture.run(["tokens", "import", fixture.file("in.jsonl", Self.line("a", token: Self.token(1))), "--store", fixture.store])
        let (code, out, _) = fixture.run(["tokens", "prune", "--expired", "--json", "--store", fixture.store])
        #expect(code == .success)
        #expect(out == #"{"installations":0,"activities":0,"events":0}"# + "\n")
    }

    @Test func checkAndBackup() {
        let fixture = CLIFixture()
        _ = fixture.run(["tokens", "import", fixture.file("in.jsonl", Self.line("a", token: Self.token(1))), "--store", fixture.store])
        let (code, out, _) = fixture.run(["store", "check", "--store", fixture.store])
        #expect(code == .success)
        #expect(out == "ok: schema 6 (current 6), 1 installations, 1 tokens, 1 topic entries\n")
        let more = (2..<60).map { Self.line("id-\($0)", token: Self.token($0), kind: $0 % 3 == 0 ? "device" : "pushToStart",
                                            topic: "region:30\($0 % 4)", level: $0 % 8) }
        _ = fixture.run(["tokens", "import", fixture.file("more.jsonl", more.joined(separator: "\n")), "--store", fixture.store])
        let backup = fixture.directory + "/backup"
        #expect(fixture.run(["store", "backup", backup, "--store", fixture.store]).0 == .success)
        #expect(fixture.run(["store", "check", "--json", "--store", backup]).1.hasPrefix(#"{"ok":true,"schemaVersion":6,"installations":59"#))
        let export = fixture.run(["tokens", "export", "--store", fixture.store]).1
        #expect(fixture.run(["tokens", "export", "--store", backup]).1 == export && export.split(separator: "\n").count == 59)
        let (again, _, err) = fixture.run(["store", "backup", backup, "--store", fixture.store])
        #expect(again == .cantCreate)
        #expect(err.contains("already exists"))
    }

    @Test func aBackupIntoADirectoryItCannotWriteIsPermissionDenied() {
        let fixture = CLIFixture()
        _ = fixture.run(["tokens", "import", fixture.file("in.jsonl", Self.line("a", token: Self.token(1))), "--store", fixture.store])
        let destination = fixture.directory + "/readonly"
        CLIFixture.shell("chmod 755 '\(fixture.directory)' && mkdir '\(destination)' && chmod 555 '\(destination)' && chmod -R a+rwX '\(fixture.store)'")
        let (status, err) = Self.runWithoutRoot(fixture, "store backup '\(destination)' --store '\(fixture.store)'")
        #expect(status == ExitCode.noPermission.rawValue)
        #expect(err.contains("cannot write the backup into \(destination)"), "\(err)")
        #expect(!err.contains("run as the store's owner"), "the store is fine; the destination is not writable")
        CLIFixture.shell("chmod 755 '\(destination)'")
    }

    @Test func errorsMapToExitCodes() {
        let fixture = CLIFixture()
        let (missing, _, missingErr) = fixture.run(["tokens", "import", fixture.directory + "/nope.jsonl", "--store", fixture.store])
        #expect(missing == .noInput)
        #expect(missingErr == "sokuho tokens import: cannot read \(fixture.directory)/nope.jsonl: No such file or directory\n")
        CLIFixture.shell("mkdir -p '\(fixture.store)' && echo 'hello' > '\(fixture.store)/data.mdb'")
        let (foreign, _, foreignErr) = fixture.run(["store", "check", "--store", fixture.store])
        #expect(foreign == .config)
        #expect(foreignErr.contains("is not a Sokuho token store"))
    }

    @Test func aReadOnlyDirectoryIsPermissionDenied() {
        let fixture = CLIFixture()
        let store = fixture.directory + "/readonly"
        // Owned by the user it runs as, so the refusal tested is the file system's, not the owner check's.
        CLIFixture.shell("chmod 755 '\(fixture.directory)' && mkdir '\(store)' && chown 65534:65534 '\(store)' && chmod 555 '\(store)'")
        let input = fixture.file("in.jsonl", Self.line("a", token: Self.token(1)))
        CLIFixture.shell("chmod 644 '\(input)'")
        let (status, err) = Self.runWithoutRoot(fixture, "tokens import '\(input)' --store '\(store)'")
        #expect(status == ExitCode.noPermission.rawValue)
        #expect(err.contains("permission denied for the token store at \(store)"))
        CLIFixture.shell("chmod 755 '\(store)'")
    }

    /// A root-run import into the daemon's store would leave files the daemon cannot open: writing
    /// commands refuse a store another user owns (root included), naming the owner and the fix;
    /// reading commands still work.
    @Test func writingIntoAStoreAnotherUserOwnsIsRefused() {
        let fixture = CLIFixture()
        let input = fixture.file("in.jsonl", Self.line("a", token: Self.token(1)))
        #expect(fixture.run(["tokens", "import", input, "--store", fixture.store]).0 == .success)
        CLIFixture.shell("chown -R 65534:65534 '\(fixture.store)'")
        let (status, _, err) = fixture.run(["tokens", "import", input, "--store", fixture.store])
        #expect(status == .noPermission)
        #expect(err.contains("permission denied for the token store at \(fixture.store): it belongs to"))
        #expect(err.contains("uid 65534"))
        #expect(err.contains("runuser -u ") && err.contains(" -- sokuho tokens import …"))
        let (prune, _, pruneErr) = fixture.run(["tokens", "prune", "--expired", "--store", fixture.store])
        #expect(prune == .noPermission)
        #expect(pruneErr.contains(" sokuho tokens prune …"))
        let (stats, out, _) = fixture.run(["tokens", "stats", "--store", fixture.store])
        #expect(stats == .success)
        #expect(out.contains("com.example.eew"))
        CLIFixture.shell("chown -R 0:0 '\(fixture.store)'")
    }

    /// Runs sokuho with `arguments` (shell-quoted) as a user permissions apply to: root ignores
    /// them, so as nobody then, from a copy nobody can reach wherever the checkout lives.
    /// Returns the exit status and stderr.
    static func runWithoutRoot(_ fixture: CLIFixture, _ arguments: String) -> (Int32, String) {
        let asUser = getuid() == 0 ? "setpriv --reuid=65534 --regid=65534 --clear-groups " : ""
        let binary = fixture.directory + "/sokuho"
        CLIFixture.shell("cp '\(CLIFixture.binary)' '\(binary)' && chmod 755 '\(binary)'")
        let status = CLIFixture.shell("\(asUser)'\(binary)' \(arguments) 2>'\(fixture.directory)/err'")
        return (status, CLIFixture.readFile(fixture.directory + "/err"))
    }

    @Test func aKilledImportIntoAnExistingStoreLeavesAConsistentCommittedPrefix() throws {
        let fixture = CLIFixture()
        // The store exists (empty): chunks go into it as they commit.
        #expect(fixture.run(["tokens", "import", fixture.file("none.jsonl", ""), "--store", fixture.store]).0 == .success)
        let (pid, input) = CLIFixture.spawn(["tokens", "import", "-", "--batch", "100", "--store", fixture.store])
        // 1 050 lines, then keep stdin open: the importer commits whole batches of 100 and waits for
        // more, so the last 50 lines are never committed.
        let lines = (0..<1050).map { Self.line(String.padded($0), token: Self.token($0)) + "\n" }.joined()
        CLIFixture.writeAll(input, lines)
        // Wait until at least 300 lines are committed, then kill it mid-import.
        var committed = 0
        for _ in 0..<500 where committed < 300 {
            usleep(20_000)
            let (_, json, _) = fixture.run(["tokens", "stats", "--json", "--store", fixture.store])
            if let range = json.firstRange(of: #""installations":"#) {
                committed = Int(json[range.upperBound...].prefix { $0.isNumber }) ?? 0
            }
        }
        kill(pid, SIGKILL)
        var status: Int32 = 0
        waitpid(pid, &status, 0)
        close(input)
        #expect(committed >= 300)

        let (code, out, _) = fixture.run(["store", "check", "--store", fixture.store])
        #expect(code == .success, "\(out)")
        let (_, exported, _) = fixture.run(["tokens", "export", "--store", fixture.store])
        let ids = exported.split(separator: "\n").compactMap { $0.split(separator: "\"").dropFirst(3).first.map(String.init) }
        // Whole batches of 100, and exactly the first lines of the input.
        #expect(ids.count % 100 == 0 && ids.count >= 300 && ids.count <= 1000)
        #expect(ids.sorted() == (0..<ids.count).map { String.padded($0) })
    }

    @Test func aNewStoreIsWrittenWholeAndPackedAndAKilledOneLeavesNoStore() throws {
        let fixture = CLIFixture()
        let lines = (0..<3000).map { Self.line(String.padded($0), token: Self.token($0), topic: "region:\($0 % 5)") }.joined(separator: "\n")
        let input = fixture.file("in.jsonl", lines)
        // Killed mid-way: no store at --store (an event or the daemon would see nothing half-made).
        let (pid, pipe) = CLIFixture.spawn(["tokens", "import", "-", "--batch", "100", "--store", fixture.store])
        CLIFixture.writeAll(pipe, lines + "\n")
        for _ in 0..<500 where access(fixture.store + "/.importing/data.mdb", F_OK) != 0 { usleep(10_000) }
        kill(pid, SIGKILL)
        var status: Int32 = 0
        waitpid(pid, &status, 0)
        close(pipe)
        #expect(access(fixture.store + "/data.mdb", F_OK) != 0, "a killed new import left a store")
        #expect(fixture.run(["store", "check", "--store", fixture.store]).0 != .success)
        // Again, to the end: the working copy goes, and the store is as packed as its backup.
        let (code, out, err) = fixture.run(["tokens", "import", input, "--store", fixture.store])
        #expect(code == .success, "\(out)\(err)")
        #expect(access(fixture.store + "/.importing", F_OK) != 0, "the working copy was left behind")
        #expect(fixture.run(["store", "check", "--store", fixture.store]).1 == "ok: schema 6 (current 6), 3000 installations, 3000 tokens, 3000 topic entries\n")
        let backup = fixture.directory + "/backup"
        #expect(fixture.run(["store", "backup", backup, "--store", fixture.store]).0 == .success)
        var imported = stat(), packed = stat()
        #expect(stat(fixture.store + "/data.mdb", &imported) == 0 && stat(backup + "/data.mdb", &packed) == 0)
        #expect(imported.st_size <= packed.st_size, "imported \(imported.st_size) bytes, its packed copy \(packed.st_size)")
        #expect(fixture.run(["tokens", "export", "--store", fixture.store]).1 == fixture.run(["tokens", "export", "--store", backup]).1)
    }

    /// A token line with its registration time, so that two imports of it export the same bytes.
    static func timedLine(_ id: String, _ token: String, kind: String = "pushToStart", topic: String = "region:301", level: Int = 3,
                          environment: String = "sandbox") -> String {
        #"{"installationId":"\#(id)","app":"com.example.eew","environment":"\#(environment)","kind":"\#(kind)","token":"\#(token)","registeredAt":1700000000000,"topics":[{"name":"\#(topic)","minLevel":\#(level)}]}"#
    }

    /// What `tokens export` prints of a store imported from `input` with these options, and
    /// whether the import left its working files behind.
    static func imported(_ fixture: CLIFixture, _ input: String, _ options: [String], into name: String)
        -> (export: String, leftOver: Bool, onePassAgain: Bool) {
        let store = fixture.directory + "/" + name
        let (code, out, err) = fixture.run(["tokens", "import", input, "--store", store] + options)
        #expect(code == .success, "\(out)\(err)")
        #expect(fixture.run(["store", "check", "--store", store]).0 == .success)
        return (fixture.run(["tokens", "export", "--store", store]).1, access(store + "/.importing", F_OK) == 0,
                err.contains("importing \(input) again in one pass"))
    }

    /// A large file is imported in parts merged at the end (issue 25); the store must be the one
    /// a single pass writes. Installations with two tokens on adjacent lines (as `tokens export`
    /// writes them) stay in one part even where a part ends between them.
    @Test func aFileImportedInPartsGivesTheStoreOnePassGives() {
        let fixture = CLIFixture()
        var lines: [String] = []
        for index in 0..<120 {
            lines.append(Self.timedLine("p-\(String.padded(index))", Self.token(index), topic: "region:\(index % 3)", level: index % 5))
            if index % 3 == 0 { lines.append(Self.timedLine("p-\(String.padded(index))", Self.token(1000 + index), kind: "device")) }
            if index % 10 == 0 {
                lines.append(#"{"installationId":"a-\#(index)","app":"com.example.eew","environment":"production","kind":"fcm","token":"fcm:\#(index)-tok_en","registeredAt":1700000000000,"topics":[{"name":"region:1","minLevel":2}]}"#)
                lines.append(#"{"activityId":"act-\#(index)","app":"com.example.eew","environment":"sandbox","eventKey":"eew-\#(index % 4)","token":"\#(Self.token(5000 + index))","startedAt":1700000000000}"#)
            }
        }
        let input = fixture.file("in.jsonl", lines.joined(separator: "\n") + "\n")
        let whole = Self.imported(fixture, input, [], into: "whole")
        #expect(whole.export.split(separator: "\n").count == lines.count)
        for (batch, partLines) in [(2, 3), (7, 20), (1, 1), (50, 100)] {
            let parted = Self.imported(fixture, input, ["--batch", "\(batch)", "--part-lines", "\(partLines)"], into: "parted-\(batch)-\(partLines)")
            #expect(parted.export == whole.export, "--batch \(batch) --part-lines \(partLines)")
            #expect(!parted.leftOver && !parted.onePassAgain)
        }
    }

    /// Parts that share an installation or a token do not commute: such a file is imported again
    /// in one pass, and the store is still what applying its lines in order gives.
    @Test func partsThatShareAnInstallationOrATokenStillGiveTheOrderedResult() {
        let fixture = CLIFixture()
        var lines = (0..<40).map { Self.timedLine("p-\(String.padded($0))", Self.token($0)) }
        // p-0001's device token 30 lines after its push-to-start token (another part); p-0002's
        // token moves to p-0039 (the later line wins); p-0003 changes its topic.
        lines.append(Self.timedLine("p-0001", Self.token(900), kind: "device", level: 1))
        lines.append(Self.timedLine("p-0039", Self.token(2), topic: "region:9"))
        lines.append(Self.timedLine("p-0003", Self.token(3), topic: "region:7", level: 0))
        let input = fixture.file("in.jsonl", lines.joined(separator: "\n") + "\n")
        let whole = Self.imported(fixture, input, [], into: "whole")
        let parted = Self.imported(fixture, input, ["--batch", "5", "--part-lines", "10"], into: "parted")
        #expect(parted.export == whole.export)
        #expect(!parted.leftOver && parted.onePassAgain)
        #expect(whole.export.contains(#""installationId":"p-0039","app":"com.example.eew","environment":"sandbox","kind":"pushToStart","token":"\#(Self.token(2))""#))
        #expect(!whole.export.contains(#""installationId":"p-0002""#))
        #expect(whole.export.contains(#""kind":"device","token":"\#(Self.token(900))""#))
    }

    @Test func aKilledImportInPartsLeavesNoStoreAndTheNextOneRemovesItsParts() {
        let fixture = CLIFixture()
        let lines = (0..<20_000).map { Self.timedLine("p-\($0)", Self.token($0), topic: "region:\($0 % 5)") }
        let input = fixture.file("in.jsonl", lines.joined(separator: "\n") + "\n")
        let (pid, stdin) = CLIFixture.spawn(["tokens", "import", input, "--batch", "100", "--part-lines", "1000", "--store", fixture.store])
        close(stdin)
        for _ in 0..<1000 where access(fixture.store + "/.importing/part-3/data.mdb", F_OK) != 0 { usleep(5_000) }
        kill(pid, SIGKILL)
        var status: Int32 = 0
        waitpid(pid, &status, 0)
        #expect(access(fixture.store + "/.importing/part-2/data.mdb", F_OK) == 0, "killed before its parts were written")
        #expect(access(fixture.store + "/data.mdb", F_OK) != 0, "a killed new import left a store")
        let (code, out, err) = fixture.run(["tokens", "import", input, "--part-lines", "7000", "--store", fixture.store])
        #expect(code == .success, "\(out)\(err)")
        #expect(access(fixture.store + "/.importing", F_OK) != 0, "the parts were left behind")
        #expect(fixture.run(["store", "check", "--store", fixture.store]).1 == "ok: schema 6 (current 6), 20000 installations, 20000 tokens, 20000 topic entries\n")
    }
}

extension String {
    /// A zero-padded 4-digit number ("0042"), so ids sort like the lines.
    static func padded(_ value: Int) -> String {
        let text = "\(value)"
        return String(repeating: "0", count: Swift.max(0, 4 - text.count)) + text
    }

    func replacingOccurrences(_ target: String, _ replacement: String) -> String {
        var result = ""
        var rest = Substring(self)
        while let range = rest.firstRange(of: target) {
            result += rest[..<range.lowerBound] + replacement
            rest = rest[range.upperBound...]
        }
        return result + rest
    }
}

import Glibc
import Testing
@testable import SokuhoCLI

/// `sokuho activities register|list`: the update tokens of iOS 17 Live Activities, per event key.
@Suite struct ActivitiesCommandTests {
    static let token = "7b0e1f9a2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7"

    func register(_ fixture: CLIFixture, id: String, event: String = "eew-20260823020000", token: String = token,
                  extra: [String] = []) -> (ExitCode, String, String) {
        fixture.run(["activities", "register", "--app", "com.example.eew", "--event-key", event, "--activity-id", id,
                     "--token", token, "--store", fixture.store] + extra)
    }

    @Test("a registered activity is listed under its event key, with its token shown only by its last 8 characters")
    func registeredActivitiesAreListedByEvent() {
        let fixture = CLIFixture()
        #expect(register(fixture, id: "act-1").0 == .success)
        #expect(register(fixture, id: "act-2", token: String(Self.token.reversed())).0 == .success)
        #expect(register(fixture, id: "act-3", event: "eew-other").0 == .success)
        let (code, out, _) = fixture.run(["activities", "list", "--event-key", "eew-20260823020000", "--store", fixture.store])
        #expect(code == .success)
        let lines = out.split(separator: "\n")
        #expect(lines.count == 2, "\(out)")
        #expect(lines.contains { $0.hasPrefix("act-1 ") && $0.contains("token …a4b5c6d7") })
        #expect(!out.contains(Self.token), "a full token must never be printed")
        #expect(!out.contains("act-3"))
    }

    @Test("registering the same activity again replaces its token and its event")
    func reRegisteringReplaces() {
        let fixture = CLIFixture()
        #expect(register(fixture, id: "act-1").0 == .success)
        let newer = "00000000000000000000000000000000000000000000000000000000deadbeef"
        #expect(register(fixture, id: "act-1", event: "eew-serial-2", token: newer, extra: ["--json"]).0 == .success)
        let (_, old, _) = fixture.run(["activities", "list", "--event-key", "eew-20260823020000", "--store", fixture.store])
        let (_, moved, _) = fixture.run(["activities", "list", "--event-key", "eew-serial-2", "--json", "--store", fixture.store])
        #expect(old.isEmpty, "\(old)")
        #expect(moved.contains(#""activityId":"act-1""#) && moved.contains(#""token":"…deadbeef""#), "\(moved)")
    }

    @Test("a bad token is refused before anything is stored, naming the option, without echoing the token")
    func aBadTokenIsRefused() {
        let fixture = CLIFixture()
        let bad = String(Self.token.dropLast())  // an odd number of hex digits
        let (code, _, err) = register(fixture, id: "act-1", token: bad)
        #expect(code == .dataError)
        #expect(err.contains("--token") && err.contains("odd"), "\(err)")
        #expect(!err.contains(bad))
        let (listCode, _, _) = fixture.run(["activities", "list", "--event-key", "eew-20260823020000", "--store", fixture.store])
        #expect(listCode == .noInput, "no store was created for a refused registration")
    }

    @Test("an activity line in a token file is stored like a registered activity and listed under its event key")
    func anImportedActivityLineIsListed() {
        let fixture = CLIFixture()
        let lines = [
            #"{"activityId":"act-1","app":"com.example.eew","environment":"production","eventKey":"eew-7","token":"\#(Self.token)","startedAt":1700000000000}"#,
            #"{"installationId":"i1","app":"com.example.eew","environment":"sandbox","kind":"device","token":"\#(Self.token)","topics":[]}"#,
            #"{"eventKey":"eew-7","activityId":"act-2","app":"com.example.eew","environment":"sandbox","token":"\#(Self.token)"}"#,
        ]
        let (code, out, err) = fixture.run(["tokens", "import", fixture.file("in.jsonl", lines.joined(separator: "\n")), "--store", fixture.store])
        #expect(code == .success, "\(err)")
        #expect(out == "imported 3 of 3 lines (0 bad)\n")
        let (_, listed, _) = fixture.run(["activities", "list", "--event-key", "eew-7", "--json", "--store", fixture.store])
        let rows = listed.split(separator: "\n")
        #expect(rows.count == 2, "\(listed)")
        #expect(rows.first == #"{"activityId":"act-1","app":"com.example.eew","environment":"production","token":"…a4b5c6d7","startedAt":1700000000000,"expiresAt":1700028800000}"#)
        #expect(rows.last?.hasPrefix(#"{"activityId":"act-2","app":"com.example.eew","environment":"sandbox""#) == true)
        #expect(fixture.run(["store", "check", "--store", fixture.store]).0 == .success)
    }

    @Test("bad activity lines are reported by line number and field, and the good lines are imported")
    func badActivityLinesAreReported() {
        let fixture = CLIFixture()
        let good = #"{"activityId":"act-1","app":"com.example.eew","environment":"sandbox","eventKey":"eew-7","token":"\#(Self.token)"}"#
        let lines = [
            good,
            good.replacingOccurrences(#""eventKey":"eew-7","#, ""),
            good.replacingOccurrences(#""eventKey""#, #""kind":"device","eventKey""#),
            good.replacingOccurrences(#""app""#, #""startedAt":"soon","app""#),
        ]
        let (code, out, err) = fixture.run(["tokens", "import", fixture.file("in.jsonl", lines.joined(separator: "\n")), "--store", fixture.store])
        #expect(code == .dataError)
        #expect(out == "imported 1 of 4 lines (3 bad)\n")
        #expect(err.contains(#"line 2: missing field "eventKey" (column "#), "\(err)")
        #expect(err.contains(#"line 3: field "kind" does not belong in an activity line (it has "activityId") (column 71)"#), "\(err)")
        #expect(err.contains("line 4: startedAt must be a whole number of milliseconds since 1970 (0 or more) (column 35)"), "\(err)")
        #expect(!err.contains(Self.token), "a full token must never be printed")
    }

    @Test("a missing required option is a usage error naming it")
    func missingOptionsAreUsageErrors() {
        let fixture = CLIFixture()
        let (code, _, err) = fixture.run(["activities", "register", "--app", "com.example.eew", "--activity-id", "a",
                                          "--token", Self.token, "--store", fixture.store])
        #expect(code == .usage, "\(err)")
        #expect(err.contains("--event-key"))
    }
}

import DaemonConfiguration
import JSONCore
import Runtime
import Testing

/// The daemon's log lines as an operator or a log shipper reads them: one line per call, whatever
/// the message or a field holds.
@Suite struct DaemonLogTests {
    let fields: [DaemonLog.Field] = [("key", .text("eew \"tokyo\"\nline2")), ("serial", .int(3)), ("seconds", .seconds(1.23456)), ("app", .text("com.example.eew/production"))]

    @Test func aTextLineHasItsLevelThenTheMessageThenQuotedFieldsWhereNeeded() {
        let log = DaemonLog(format: .text, timestamps: false) { _ in }
        let line = log.line(.warning, "event stopped", fields, time: nil)
        #expect(line == #"warning event stopped key="eew \"tokyo\"\nline2" serial=3 seconds=1.235 app=com.example.eew/production"#)
    }

    @Test func aNewlineInATextMessageStaysOnOneLine() {
        let log = DaemonLog(format: .text, timestamps: false) { _ in }
        let line = log.line(.error, "first\nsecond\r\u{1b}[31m", [("empty", .text(""))], time: "2026-01-02T03:04:05.006Z")
        #expect(line == #"2026-01-02T03:04:05.006Z error first\nsecond\r\u{1b}[31m empty="""#)
        #expect(!line.contains("\n"))
    }

    @Test func aJSONLineHasLevelMessageTimeAndTheFieldsAsMembers() throws {
        let log = DaemonLog(format: .json, timestamps: true) { _ in }
        let line = log.line(.info, "event \"finished\"\n", fields, time: "2026-01-02T03:04:05.006Z")
        #expect(!line.contains("\n"))
        let json = try JSONParser.parse(line)
        #expect(json["time"]?.stringValue == "2026-01-02T03:04:05.006Z")
        #expect(json["level"]?.stringValue == "info")
        #expect(json["message"]?.stringValue == "event \"finished\"\n")
        #expect(json["key"]?.stringValue == "eew \"tokyo\"\nline2")
        #expect(json["serial"]?.int64Value == 3)
        #expect(line.contains(#""seconds":1.235"#), "\(line)")
    }

    @Test func aJSONLineUnderJournaldHasNoTime() throws {
        let lines = Lines()
        let log = DaemonLog(format: .json, environment: ["JOURNAL_STREAM": "8:1234"]) { lines.append($0) }
        log.info("sokuho serve: listening")
        let json = try JSONParser.parse(try #require(lines.all.first))
        #expect(json["time"] == nil && json["level"]?.stringValue == "info")
    }

    @Test func aTextLineOutsideJournaldStartsWithAnRFC3339UTCTime() throws {
        let lines = Lines()
        DaemonLog(format: .text, environment: [:]) { lines.append($0) }.error("pool halted")
        let line = try #require(lines.all.first)
        // 2026-12-03T20:08:03.123Z error pool halted
        let stamp = String(line.prefix(24))
        #expect(stamp.count == 24 && stamp.dropFirst(4).first == "-" && stamp.dropFirst(10).first == "T" && stamp.hasSuffix("Z"), "\(line)")
        #expect(line.dropFirst(24) == " error pool halted")
    }

    @Test func timestampsAreUTCWithMilliseconds() {
        #expect(DaemonLog.timestamp(seconds: 0, milliseconds: 7) == "1970-01-01T00:00:00.007Z")
        #expect(DaemonLog.timestamp(seconds: 1_767_225_599, milliseconds: 999) == "2025-12-31T23:59:59.999Z")
    }

    /// What a log wrote, line by line.
    final class Lines: @unchecked Sendable {
        // @unchecked: the tests write from their own thread only.
        private(set) var all: [String] = []
        func append(_ line: String) { all.append(line) }
    }
}

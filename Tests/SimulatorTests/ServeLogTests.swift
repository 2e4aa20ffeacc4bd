#if canImport(Glibc)
import Glibc
#endif
import JSONCore
import Testing

/// `sokuho serve`'s log as an operator sees it on stderr (issue 24): an event submitted over the API
/// gives one accepted and one finished line with its counts, in text or JSON, stamped with the time
/// unless journald (`JOURNAL_STREAM`) stamps it, and never a token.
@Suite struct ServeLogTests {
    typealias Daemon = ServeTests.Daemon

    /// The four ways a daemon may be logging: text or json, under journald or not.
    static let ways: [(format: String, journald: Bool)] = [("text", false), ("text", true), ("json", false), ("json", true)]

    @Test(arguments: ways)
    func anEventSubmittedOverTheAPIIsLoggedWhenAcceptedAndWhenFinished(format: String, journald: Bool) throws {
        let scenario = try FanoutScenario()
        let phones = (0..<40).map { FanoutScenario.Phone(id: "p\($0)", token: FanoutScenario.token($0), topics: [("region:0", 1)]) }
        try scenario.register(phones)
        let daemon = try Daemon(scenario, arguments: ["--log-format", format],
                                environment: ["JOURNAL_STREAM": journald ? "8:4242" : nil, "SOKUHO_LOG_FORMAT": nil])
        let accepted = daemon.curl("POST", "/v1/events", body: startEvent(key: "eew-logged", groups: [("region:0", 1, "logged")], channel: "null"))
        #expect(accepted.status == 202, "\(accepted.body)")
        let url = try #require(try JSONParser.parse(accepted.body)["url"]?.stringValue)
        _ = try daemon.waitForEvent(url)
        // The finished line is written just after the report is readable.
        for _ in 0..<200 where !daemon.child.stderr.contains("event finished") { usleep(25_000) }
        #expect(daemon.stop() == 0)
        let lines = daemon.child.stderr.split(separator: "\n").map(String.init)

        let acceptedLine = try #require(lines.first { $0.contains("event accepted") }, "\(lines)")
        let finishedLine = try #require(lines.first { $0.contains("event finished") }, "\(lines)")
        let listening = try #require(lines.first { $0.contains("listening on") }, "\(lines)")
        if format == "json" {
            // Every line is one JSON object with a level and a message.
            for line in lines {
                let json = try JSONParser.parse(line)
                #expect(json["level"]?.stringValue != nil && json["message"]?.stringValue != nil, "\(line)")
                #expect((json["time"] != nil) == !journald, "\(line)")
            }
            let start = try JSONParser.parse(acceptedLine), end = try JSONParser.parse(finishedLine)
            #expect(start["level"]?.stringValue == "info" && start["message"]?.stringValue == "event accepted")
            #expect(start["key"]?.stringValue == "eew-logged" && start["serial"]?.int64Value == 1 && start["kind"]?.stringValue == "start", "\(acceptedLine)")
            #expect(end["key"]?.stringValue == "eew-logged" && end["serial"]?.int64Value == 1, "\(finishedLine)")
            #expect(end["targets"]?.int64Value == 40 && end["delivered"]?.int64Value == 40 && end["unknown"]?.int64Value == 0, "\(finishedLine)")
            #expect(end["seconds"]?.doubleValue != nil, "\(finishedLine)")
            #expect(end["androidDelivered"] == nil, "no Android phones, no Android count: \(finishedLine)")
            if let time = start["time"]?.stringValue { #expect(time.count == 24 && time.hasSuffix("Z"), "\(time)") }
        } else {
            // LEVEL message fields, after a timestamp unless journald adds its own.
            func unstamped(_ line: String) -> String {
                guard !journald else { return line }
                let stamp = line.prefix { $0 != " " }
                #expect(stamp.count == 24 && stamp.hasPrefix("20") && stamp.dropFirst(10).first == "T" && stamp.hasSuffix("Z"), "\(line)")
                return String(line.dropFirst(stamp.count + 1))
            }
            #expect(unstamped(acceptedLine) == "info event accepted key=eew-logged serial=1 kind=start app=com.example.eew/production", "\(acceptedLine)")
            #expect(unstamped(finishedLine).hasPrefix("info event finished key=eew-logged serial=1 kind=start app=com.example.eew/production "
                                                      + "targets=40 delivered=40 unknown=0 failed=0 pruned=0 seconds="), "\(finishedLine)")
            #expect(unstamped(listening).hasPrefix("info sokuho serve: listening on"), "\(listening)")
            for line in lines {
                let rest = unstamped(line)
                #expect(["info ", "warning ", "error "].contains { rest.hasPrefix($0) }, "\(line)")
            }
        }
        // Events' keys, counts and app names; never a device token or the admin token.
        let text = lines.joined(separator: "\n")
        #expect(!text.contains(daemon.token) && !phones.contains { text.contains($0.token) }, "\(text)")
    }
}

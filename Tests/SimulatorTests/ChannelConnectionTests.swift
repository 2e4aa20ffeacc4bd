#if canImport(Glibc)
import Glibc
#endif
import JSONCore
import Testing

/// The daemon's channel calls on one kept connection per app (issue 21): every channel route,
/// credential check and `"channel":"auto"` event used to build a pool of its own that was never
/// freed (+2 descriptors and ≈ 0.6 MB each; at 200 descriptors the daemon died at call 90).
@Suite struct ChannelConnectionTests {
    /// The daemon's open descriptors and anonymous memory (kB), from /proc.
    static func usage(of pid: pid_t) -> (fds: Int, anonKB: Int) {
        var fds = 0
        if let directory = opendir("/proc/\(pid)/fd") {
            while readdir(directory) != nil { fds += 1 }
            closedir(directory)
            fds -= 2  // "." and ".."
        }
        let status = String(decoding: readFile("/proc/\(pid)/status"), as: UTF8.self)
        let anon = status.split(separator: "\n").first { $0.hasPrefix("RssAnon:") }
            .flatMap { Int($0.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "") } ?? -1
        return (fds, anon)
    }

    /// 2,000 channel operations through the API and 200 auto-channel start/end events, after a
    /// warm-up: the daemon's descriptors and anonymous memory stay flat, and the simulator never
    /// sees more than one channel-host connection open at a time.
    @Test func channelCallsAndAutoChannelEventsLeaveDescriptorsAndMemoryFlat() throws {
        let scenario = try FanoutScenario()
        try scenario.register((0..<5).map { FanoutScenario.Phone(id: "phone-\($0)", token: FanoutScenario.token($0), topics: [("region:0", 0)], broadcast: true) })
        let daemon = try ServeTests.Daemon(scenario, extra: #","rateLimit":{"perSecond":100000,"burst":100000}"#)
        defer { _ = daemon.stop() }
        let query = "?app=\(testBundle)&environment=production"
        let create = ("POST", "/v1/channels", Optional(#"{"app":"\#(testBundle)","environment":"production","storagePolicy":0}"#))
        let list = ("GET", "/v1/channels" + query, String?.none)

        /// Creates, lists and deletes `count` channels: 4 × `count` operations, each answered 200/201.
        func channelRound(_ count: Int) throws {
            let made = daemon.requestMany(Array(repeating: create, count: count) + Array(repeating: list, count: count), in: scenario.directory)
            #expect(made.count == 2 * count && made.allSatisfy { $0 == "201" || $0 == "200" }, "\(Set(made))")
            let listed = daemon.curl("GET", "/v1/channels" + query)
            let ids = try #require(try JSONParser.parse(listed.body)["channels"]?.arrayValue?.compactMap(\.stringValue), "\(listed.body)")
            let deletes = ids.map { ("DELETE", "/v1/channels/\(pathSegment($0))" + query, String?.none) }
            let deleted = daemon.requestMany(deletes + Array(repeating: list, count: 2 * count - deletes.count), in: scenario.directory)
            #expect(deleted.count == 2 * count && deleted.allSatisfy { $0 == "200" }, "\(Set(deleted))")
        }

        /// `count` start events with an auto channel, then their ends (which delete the channels).
        func autoEvents(_ count: Int, from first: Int) throws {
            let keys = (first..<first + count).map { "auto-\($0)" }
            for (kind, serial) in [("start", 1), ("end", 2)] {
                let bodies = keys.map { key in
                    kind == "start" ? startEvent(key: key, serial: serial, groups: [("region:0", 3, "start")])
                                    : followEvent(key: key, serial: serial, kind: "end", groups: [("region:0", 3, "end")])
                }
                let statuses = daemon.requestMany(bodies.map { ("POST", "/v1/events", $0) }, in: scenario.directory)
                #expect(statuses.allSatisfy { $0 == "202" }, "\(Set(statuses))")
                for key in keys {
                    let report = try daemon.waitForEvent("/v1/events/\(key)/\(serial)")
                    #expect(report["state"]?.stringValue == "done", "\(report.jsonText)")
                }
            }
        }

        try channelRound(10)
        try autoEvents(5, from: 0)
        let before = Self.usage(of: daemon.child.pid)
        let connectionsBefore = scenario.running.counters.connections
        try channelRound(500)  // 2,000 operations
        try autoEvents(100, from: 5)  // 200 events
        let after = Self.usage(of: daemon.child.pid)

        #expect(after.fds <= before.fds + 4, "descriptors \(before.fds) → \(after.fds)")
        #expect(after.anonKB <= before.anonKB + 4 * 1024, "anonymous memory \(before.anonKB) → \(after.anonKB) kB")
        let counters = scenario.running.counters
        // No handshake per call: channel calls reuse the kept connection, broadcasts the warm pool.
        #expect(counters.connections == connectionsBefore, "connections opened during 2,000 calls and 200 events: \(counters.connections - connectionsBefore)")
        #expect(counters.managementConnectionsPeak == 1, "channel-host connections open at once: \(counters.managementConnectionsPeak)")
        #expect(counters.channelRequests >= 2_000, "\(counters.channelRequests)")
        // The phones subscribed to each auto channel at the start and got each end as a broadcast.
        let broadcasts = scenario.broadcasts()
        #expect(broadcasts.count == 105 && broadcasts.values.allSatisfy { $0 == 1 }, "broadcasts accepted per channel: \(broadcasts.count) channels, \(broadcasts.values.reduce(0, +)) in all")
    }
}

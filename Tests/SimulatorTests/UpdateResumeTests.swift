#if canImport(Glibc)
import Glibc
#endif
import JSONCore
import TokenStore
import Testing

/// Issue 32: an update or end killed mid-way and run again sends only to the phones without an
/// answer — the phones a lane answered before the kill are not sent the same update again
/// (`UpdateLedger`: the answers in the store, written before each chunk and every second).
@Suite struct UpdateResumeTests {
    /// Runs the killed event again: its run and report, the phones `count` says were reached
    /// before and after, how many were reached twice, and the lane's `answeredBeforeRestart`.
    static func rerun(_ killed: KilledFanout, _ options: [String], lane: String, count: () -> [String: Int]) throws
        -> (run: CLIRun, report: JSONValue, atKill: [String: Int], after: [String: Int], twice: Int, skipped: Int) {
        let atKill = count()
        let run = killed.scenario.fanout(killed.eventPath, options)
        let report = try JSONParser.parse(run.out)
        let after = count()
        let skipped = Int(report["lanes"]?[lane]?["answeredBeforeRestart"]?.int64Value ?? -1)
        return (run, report, atKill, after, after.values.filter { $0 > 1 }.count, skipped)
    }

    /// 4,000 Android phones got serial 1's start; serial 2, an update, is killed 300 ms after
    /// 1,500 of its messages were accepted (answers take 100 ms: ~1,000 a second), then run again.
    /// Before, the rerun sent all 4,000 again: every phone updated before the kill got it twice.
    @Test func aResumedAndroidUpdateSendsAgainOnlyToPhonesWithoutAnAnswer() throws {
        let phones = 4_000
        let pool = FanoutResumeTests.pool + ["--fcm-connections", "1"]
        let start = startEvent(key: "eew-update", groups: [("region:0", 3, "one")], channel: "null")
        let update = followEvent(key: "eew-update", serial: 2, kind: "update", groups: [("region:0", 3, "two")], channel: "null")
        let killed = try KilledFanout(event: update, killAt: phones + 1_500, phoneCount: 0, androidCount: phones, latency: .milliseconds(100),
                                      pool: pool, pause: .milliseconds(300), before: start)
        func updated() -> [String: Int] {
            killed.scenario.fcmMessages().mapValues { messages in messages.filter { $0["data"]?["kind"]?.stringValue == "update" }.count }
                .filter { $0.value > 0 }
        }
        let (run, report, atKill, after, twice, skipped) = try Self.rerun(killed, killed.scenario.android + pool, lane: "fcm", count: updated)
        print("update resume: \(atKill.count) phones updated before the kill, rerun sent \(killed.acceptedSinceKill()), "
              + "answered before the restart \(skipped), twice \(twice)")
        #expect(run.code == .success, "\(run)")
        #expect(after.count == phones, "\(phones - after.count) phones got no update")
        #expect(atKill.count >= 1_500 && atKill.count < phones, "the kill came after \(atKill.count) updates")
        // Sent twice: only phones whose answer came after the last write (every 200 ms: ~200
        // here) or whose message was in flight (FCM's 100 streams + a batch) — never a phone
        // whose answer was written.
        #expect(twice < atKill.count / 2, "\(twice) of the \(atKill.count) phones updated before the kill got the update again")
        #expect(skipped == atKill.count - twice, "answeredBeforeRestart \(skipped)")
        #expect(report["lanes"]?["fcm"]?["delivered"]?.int64Value == Int64(killed.acceptedSinceKill()), "\(report)")
    }

    /// The same on iOS: 4,000 activity update tokens registered for the key (iOS 17 activities,
    /// no channel), an end killed 300 ms after 1,500 were accepted (2 × 100 streams, 100 ms
    /// answers: ~2,000 a second), then run again: only the activities without an answer get it.
    @Test func aResumedActivityEndSendsAgainOnlyToActivitiesWithoutAnAnswer() throws {
        let activities = 4_000
        let tokens = (0..<activities).map { FanoutScenario.token($0, prefix: "b1") }
        let end = followEvent(key: "eew-end", serial: 2, kind: "end", groups: [("region:0", 3, "over")], channel: "null")
        let killed = try KilledFanout(event: end, killAt: 1_500, phoneCount: 0, latency: .milliseconds(100), pause: .milliseconds(300),
                                      prepare: { scenario in
            _ = try scenario.withStore { store in
                try store.write(tokens.enumerated().map { number, token in
                    .putActivity(ActivityRecord(id: "activity-\(number)", app: testBundle, environment: .production, updateToken: Array(hex: token),
                                                eventKey: "eew-end", startedAt: 1_000))
                })
            }
        })
        func ended() -> [String: Int] {
            killed.scenario.devicePushes().mapValues { pushes in pushes.filter { $0.body["aps"]?["event"]?.stringValue == "end" }.count }
                .filter { $0.value > 0 }
        }
        let (run, _, atKill, after, twice, skipped) = try Self.rerun(killed, FanoutResumeTests.pool, lane: "apns", count: ended)
        print("end resume: \(atKill.count) activities ended before the kill, rerun sent \(killed.acceptedSinceKill()), "
              + "answered before the restart \(skipped), twice \(twice)")
        #expect(run.code == .success, "\(run)")
        #expect(after.count == activities, "\(activities - after.count) activities got no end")
        #expect(atKill.count >= 1_500 && atKill.count < activities, "the kill came after \(atKill.count) ends")
        #expect(twice < atKill.count / 2, "\(twice) of the \(atKill.count) activities ended before the kill got the end again")
        #expect(skipped == atKill.count - twice, "answeredBeforeRestart \(skipped)")
    }
}

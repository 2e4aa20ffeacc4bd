import JSONCore

/// What became of an event's fan-out: every target ends in exactly one of delivered, pruned,
/// failed, unknown or expired; starts the event did not send are counted apart (skipped by the
/// start budget, duplicates avoided, answered before a restart). Printed when done, kept in the
/// store with the serial, and summed over the runs of one serial (a resumed run adds to it).
public struct FanoutReport: Sendable, Equatable {
    public var eventKey = ""
    public var serial: UInt32 = 0
    public var kind = ""
    /// Each provider lane's share (`lanes` in JSON): the counters below are their sums, so a
    /// count means the same in every lane and no lane's phones hide in another's.
    public var lanes = PerLane { _ in LaneReport() }
    /// Pushes handed to a provider that reached an outcome below (broadcasts included, one per channel).
    public var targets: Int { lanes.sum(\.targets) }
    public var delivered: Int { lanes.sum(\.delivered) }
    /// Answers saying the token is dead, by reason: pruned from the store (unless the circuit
    /// breaker withheld it, or the phone registered again after a 410's timestamp).
    public var pruned: [String: Int] = [:]
    /// Tokens actually removed from the store.
    public var tokensRemoved: Int { lanes.sum(\.tokensRemoved) }
    /// Back-off retries after 429/5xx (a push may retry several times).
    public var retried = 0
    /// Refused for good (not a dead token), by reason ("connection" when none came).
    public var failed: [String: Int] = [:]
    /// In flight on a connection that died: maybe delivered, not sent again (starts, `onUnknown: report`).
    public var unknown: Int { lanes.sum(\.unknown) }
    /// Sent again after an unknown outcome (`onUnknown: resend`, updates, ends): maybe twice on the phone.
    public var resentAfterUnknown: Int { lanes.sum(\.resentAfterUnknown) }
    public var expired: Int { lanes.sum(\.expired) }
    /// Starts not sent because the phone had too many recent starts (its push-to-start budget).
    public var skippedByBudget: Int { lanes.sum(\.skippedByBudget) }
    /// Starts not sent because the phone already got one for this event (another group, an earlier serial).
    public var duplicatesAvoided: Int { lanes.sum(\.duplicatesAvoided) }
    /// Starts not sent again after a restart because the provider had answered them before.
    public var answeredBeforeRestart: Int { lanes.sum(\.answeredBeforeRestart) }
    /// Starts an interrupted run held for a back-off resend (answered 429/5xx, on no connection),
    /// sent by the run that resumed it whatever `onUnknown` says: no phone can get two.
    public var resentAfterBackOff: Int { lanes.sum(\.resentAfterBackOff) }
    public var broadcasts = 0
    public var fallbackAlerts = 0
    /// Bad-token answers kept because a circuit breaker tripped.
    public var pruneWithheld: Int { lanes.sum(\.pruneWithheld) }
    /// Why the event stopped early, if it did.
    public var stopped: String?
    /// Android phones (the FCM lane): what their messages became, and the phones not sent to —
    /// the app has no `android` member, or Android stopped (`androidStopped`: FCM's circuit
    /// breaker, a refused service account) while iOS went on. The `android` member of the JSON.
    public var android: LaneReport { lanes[.fcm] }
    public var androidSkipped: Int {
        get { lanes[.fcm].skipped }
        set { lanes[.fcm].skipped = newValue }
    }
    public var androidStopped: String? {
        get { lanes[.fcm].stopped }
        set { lanes[.fcm].stopped = newValue }
    }
    /// What a provider could not carry while the others sent as usual, one line each, e.g. "groups[0]
    /// (region:1) for Android: message: is 4443 bytes …" (its phones are in `androidSkipped`).
    public var warnings: [String] = []
    /// A later serial of the key took over this one's remaining starts while it ran.
    public var supersededBy: UInt32?

    /// Milliseconds from the start of the run to the first push handed to a connection, to the
    /// first answer, and to the last answer.
    public var firstPushMs: Double?
    public var firstAnswerMs: Double?
    public var lastAnswerMs: Double?
    public var seconds = 0.0
    /// Runs that worked on this serial (more than one after a restart).
    public var runs = 1

    public init() {}

    public var prunedTotal: Int { pruned.values.reduce(0, +) }
    public var failedTotal: Int { failed.values.reduce(0, +) }

    /// Whether every target ended delivered or pruned (what exit status 0 promises).
    public var isComplete: Bool { stopped == nil && failedTotal == 0 && unknown == 0 && expired == 0 }

    public var pushesPerSecond: Double { seconds > 0 ? Double(delivered + prunedTotal + failedTotal) / seconds : 0 }

    /// This run's report added to an earlier run's of the same serial.
    public func adding(_ earlier: FanoutReport) -> FanoutReport {
        var sum = self
        for lane in Lane.allCases { sum.lanes[lane] = lanes[lane].adding(earlier.lanes[lane]) }
        sum.pruned.merge(earlier.pruned, uniquingKeysWith: +)
        sum.retried += earlier.retried
        sum.failed.merge(earlier.failed, uniquingKeysWith: +)
        sum.broadcasts += earlier.broadcasts
        sum.fallbackAlerts += earlier.fallbackAlerts
        sum.seconds += earlier.seconds
        sum.runs += earlier.runs
        sum.warnings = earlier.warnings + warnings.filter { !earlier.warnings.contains($0) }
        sum.supersededBy = supersededBy ?? earlier.supersededBy
        return sum
    }

    public var json: [UInt8] {
        var writer = JSONWriter()
        writer.beginObject()
        writer.key("event"); writer.string(eventKey)
        writer.key("serial"); writer.int(serial)
        writer.key("kind"); writer.string(kind)
        for (name, value) in counts { writer.key(name); writer.int(value) }
        for (name, table) in [("pruned", pruned), ("failed", failed)] {
            writer.key(name); writer.beginObject()
            for (reason, count) in table.sorted(by: { $0.key < $1.key }) { writer.key(reason); writer.int(count) }
            writer.endObject()
        }
        writer.key("stopped"); if let stopped { writer.string(stopped) } else { writer.null() }
        for (name, value) in [("firstPushMs", firstPushMs), ("firstAnswerMs", firstAnswerMs), ("lastAnswerMs", lastAnswerMs)] {
            writer.key(name); if let value { writer.double((value * 10).rounded() / 10) } else { writer.null() }
        }
        writer.key("seconds"); writer.double((seconds * 1000).rounded() / 1000)
        writer.key("pushesPerSecond"); writer.double(pushesPerSecond.rounded())
        writer.key("runs"); writer.int(runs)
        writer.key("lanes"); writer.beginObject()
        for (lane, report) in lanes.all { writer.key(lane.name); report.write(to: &writer) }
        writer.endObject()
        // The FCM lane as it was reported before lanes (clients read it).
        writer.key("android"); writer.beginObject()
        for name in ["targets", "delivered", "pruned", "failed", "unknown", "expired", "skipped"] {
            writer.key(name); writer.int(android.counts.first { $0.0 == name }?.1 ?? 0)
        }
        writer.key("stopped"); if let androidStopped { writer.string(androidStopped) } else { writer.null() }
        writer.endObject()
        writer.key("warnings"); writer.beginArray()
        for warning in warnings { writer.string(warning) }
        writer.endArray()
        if let supersededBy { writer.key("supersededBy"); writer.int(supersededBy) }
        writer.endObject()
        return writer.bytes
    }

    /// The plain counters in report order (JSON and text share it).
    private var counts: [(String, Int)] {
        [("targets", targets), ("delivered", delivered), ("retried", retried), ("unknown", unknown),
         ("resentAfterUnknown", resentAfterUnknown), ("expired", expired), ("skippedByBudget", skippedByBudget),
         ("duplicatesAvoided", duplicatesAvoided), ("answeredBeforeRestart", answeredBeforeRestart),
         ("resentAfterBackOff", resentAfterBackOff), ("broadcasts", broadcasts),
         ("fallbackAlerts", fallbackAlerts), ("pruneWithheld", pruneWithheld), ("tokensRemoved", tokensRemoved)]
    }

    /// Reads a report back from its JSON (the copy kept in the store).
    public init?(json bytes: [UInt8]) {
        guard let value = try? JSONParser.parse(bytes), value.isObject else { return nil }
        eventKey = value["event"]?.stringValue ?? ""
        serial = UInt32(value["serial"]?.int64Value ?? 0)
        kind = value["kind"]?.stringValue ?? ""
        func int(_ key: String) -> Int { Int(value[key]?.int64Value ?? 0) }
        retried = int("retried")
        broadcasts = int("broadcasts"); fallbackAlerts = int("fallbackAlerts")
        for (key, member) in value["pruned"]?.objectMembers ?? [] { pruned[key] = Int(member.int64Value ?? 0) }
        for (key, member) in value["failed"]?.objectMembers ?? [] { failed[key] = Int(member.int64Value ?? 0) }
        stopped = value["stopped"]?.stringValue
        firstPushMs = value["firstPushMs"]?.doubleValue
        firstAnswerMs = value["firstAnswerMs"]?.doubleValue
        lastAnswerMs = value["lastAnswerMs"]?.doubleValue
        seconds = value["seconds"]?.doubleValue ?? 0
        runs = max(1, int("runs"))
        if let members = value["lanes"]?.objectMembers {
            for (name, member) in members { if let lane = Lane(name: name) { lanes[lane] = LaneReport(json: member) } }
        } else {
            // A report from before lanes: its Android member is the FCM lane, the rest is APNs'.
            var fcm = LaneReport()
            if let member = value["android"] {
                fcm = LaneReport(json: member)
                fcm.stopped = member["stopped"]?.stringValue
            }
            var apns = LaneReport()
            apns.delivered = int("delivered") - fcm.delivered
            apns.pruned = prunedTotal - fcm.pruned
            apns.failed = failedTotal - fcm.failed
            apns.unknown = int("unknown") - fcm.unknown
            apns.expired = int("expired") - fcm.expired
            apns.answeredBeforeRestart = int("answeredBeforeRestart"); apns.duplicatesAvoided = int("duplicatesAvoided")
            apns.skippedByBudget = int("skippedByBudget"); apns.resentAfterUnknown = int("resentAfterUnknown")
            apns.resentAfterBackOff = int("resentAfterBackOff"); apns.pruneWithheld = int("pruneWithheld")
            apns.tokensRemoved = int("tokensRemoved")
            lanes[.apns] = apns
            lanes[.fcm] = fcm
        }
        warnings = value["warnings"]?.arrayValue?.compactMap(\.stringValue) ?? []
        supersededBy = value["supersededBy"]?.int64Value.map { UInt32(clamping: $0) }
    }

    /// The human-readable report, one fact per line.
    public var text: String {
        var lines = ["event         \(eventKey) serial \(serial) (\(kind))\(runs > 1 ? ", \(runs) runs" : "")"]
        lines.append("targets       \(targets)" + (broadcasts > 0 ? " (\(broadcasts) broadcasts)" : "") + (fallbackAlerts > 0 ? " (\(fallbackAlerts) fallback alerts)" : ""))
        lines.append("delivered     \(delivered)")
        func table(_ values: [String: Int]) -> String { values.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ") }
        lines.append("pruned        \(prunedTotal)" + (pruned.isEmpty ? "" : " (\(table(pruned)))") + ", \(tokensRemoved) removed from the store")
        lines.append("failed        \(failedTotal)" + (failed.isEmpty ? "" : " (\(table(failed)))"))
        lines.append("unknown       \(unknown)" + (resentAfterUnknown > 0 ? ", resent after unknown \(resentAfterUnknown)" : ""))
        lines.append("expired       \(expired)")
        lines.append("retried       \(retried)")
        lines.append("not sent      \(skippedByBudget) over the start budget, \(duplicatesAvoided) duplicates avoided, \(answeredBeforeRestart) answered before a restart")
        if resentAfterBackOff > 0 { lines.append("resumed       \(resentAfterBackOff) held for a back-off resend when the earlier run stopped, sent now") }
        if pruneWithheld > 0 { lines.append("withheld      \(pruneWithheld) bad-token answers not pruned (circuit breaker)") }
        func ms(_ value: Double?) -> String { value.map { "\(Int($0.rounded())) ms" } ?? "-" }
        lines.append("timing        first push \(ms(firstPushMs)), first answer \(ms(firstAnswerMs)), last answer \(ms(lastAnswerMs)); \(Int(pushesPerSecond.rounded())) pushes/s")
        if android.targets + androidSkipped > 0 || androidStopped != nil {
            lines.append("android       \(android.targets) targets: \(android.delivered) delivered, \(android.pruned) pruned, \(android.failed) failed, "
                         + "\(android.unknown) unknown, \(android.expired) expired" + (androidSkipped > 0 ? "; \(androidSkipped) not sent to" : "")
                         + (androidStopped.map { "; stopped: \($0)" } ?? ""))
        }
        for warning in warnings { lines.append("warning       \(warning)") }
        if let supersededBy { lines.append("superseded    by serial \(supersededBy), which starts the phones this serial had not reached") }
        if let stopped { lines.append("stopped       \(stopped)") }
        return lines.joined(separator: "\n")
    }
}

import TokenStore

/// One pass over a topic's targets that hands out push-to-starts (and fallback alerts): either
/// the rest of a scan a crash or an earlier serial left unfinished, or the levels an event adds.
struct StartPlan {
    let group: FanoutEvent.Group
    /// Targets with a minimum level at or below this were handled by an earlier pass (nil: none).
    let floor: UInt8?
    let level: UInt8
    /// Where a resumed pass starts (everything up to here has its outcome), and the end of what
    /// was handed out before the restart, with the answered hashes in between and those that
    /// waited off the wire for a back-off resend (sent again without doubt).
    let resumeFrom: [UInt8]
    let oldSubmitted: [UInt8]
    let oldAnswered: Set<UInt64>
    var oldOffWire: Set<UInt64> = []
    /// Where this pass's answer log numbers on from: past the segments an earlier run left
    /// (`AnswerLog`); nil when another pass of this run shares the topic (both would write the
    /// same record's segments): its checkpoints then carry the whole set.
    var firstSegment: UInt32? = 0
    /// The window index in the sink, and the sink slots of its starts and fallbacks.
    var window = 0
    var startSlot = 0
    var fallbackSlot = 0
    /// The slot of its Android starts (FCM messages; tracked by the same window).
    var androidSlot = 0
}

extension StartPlan {
    /// The start passes `event` needs, in the order groups hand out starts, given its key's start
    /// progress per topic. Starts come from a `start`, and from an `update` whose groups reach
    /// topics or levels no start covered yet.
    static func plans(for event: FanoutEvent, progress records: [StartProgress]) -> [StartPlan] {
        guard event.kind != .end else { return [] }
        var plans: [StartPlan] = []
        for group in event.groupsByPriority {
            let progress = records.first { $0.topic == group.topic }
            var floor = progress?.doneLevel
            if let progress, let scanLevel = progress.scanLevel {
                // An unfinished pass (a crash, or an earlier serial still fanning out): finish it
                // first, with this serial's content. Its pending starts are taken over, never dropped.
                plans.append(StartPlan(group: group, floor: floor, level: scanLevel, resumeFrom: progress.completed,
                                       oldSubmitted: progress.submitted, oldAnswered: Set(progress.answered),
                                       oldOffWire: Set(progress.offWire).subtracting(progress.answered),
                                       firstSegment: progress.answerLog.map { $0.segment + 1 } ?? 0))
                floor = max(floor ?? 0, scanLevel)
            }
            if floor.map({ group.level > $0 }) ?? true {
                plans.append(StartPlan(group: group, floor: floor, level: group.level, resumeFrom: [], oldSubmitted: [], oldAnswered: []))
            }
        }
        for index in plans.indices where plans.filter({ $0.group.topic == plans[index].group.topic }).count > 1 {
            plans[index].firstSegment = nil
        }
        return plans
    }
}

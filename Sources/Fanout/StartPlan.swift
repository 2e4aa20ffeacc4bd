import TokenStore

/// One pass over a topic's targets that hands out push-to-starts (and fallback alerts): either
/// the rest of a scan a crash or an earlier serial left unfinished, or the levels an event adds.
struct StartPlan {
    let group: FanoutEvent.Group
    /// Targets with a minimum level at or below this were handled by an earlier pass (nil: none).
    let floor: UInt8?
    let level: UInt8
    /// Where the pass's scan resumes: its non-FCM targets, or every target without an Android window.
    var resume = Resume()
    /// Where this pass's answer log numbers on from: past the segments an earlier run left
    /// (`AnswerLog`); nil when another pass of this run shares the topic (both would write the
    /// same record's segments): its checkpoints then carry the whole set.
    var firstSegment: UInt32? = 0
    /// The window index in the sink, and the sink slots of its starts and fallbacks.
    var window = 0
    var startSlot = 0
    var fallbackSlot = 0
    /// The slot of its Android starts (FCM messages).
    var androidSlot = 0
    /// Where the pass's FCM targets resume when they are scanned apart (`androidWindow`): the
    /// record's Android part, or — from a record without one, which covered every kind in one
    /// order — the same position as the others.
    var androidResume = Resume()
    /// The window of its FCM targets, scanned apart from the others so that Android phones do not
    /// wait for every iOS start (nil: the app has no Android side; its FCM tokens are counted
    /// skipped in the one scan).
    var androidWindow: Int?

    /// Where one scan of a pass resumes (everything up to `resumeFrom` has its outcome), and the
    /// end of what was handed out before the restart, with the answered hashes in between and
    /// those that waited off the wire for a back-off resend (sent again without doubt). Empty for
    /// a new pass.
    struct Resume {
        var resumeFrom: [UInt8] = []
        var oldSubmitted: [UInt8] = []
        var oldAnswered: Set<UInt64> = []
        var oldOffWire: Set<UInt64> = []
    }
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
                var plan = StartPlan(group: group, floor: floor, level: scanLevel,
                                     resume: Resume(resumeFrom: progress.completed, oldSubmitted: progress.submitted,
                                                    oldAnswered: Set(progress.answered),
                                                    oldOffWire: Set(progress.offWire).subtracting(progress.answered)),
                                     firstSegment: progress.answerLog.map { $0.segment + 1 } ?? 0)
                plan.androidResume = progress.android.map {
                    Resume(resumeFrom: $0.completed, oldSubmitted: $0.submitted, oldAnswered: Set($0.answered),
                           oldOffWire: Set($0.offWire).subtracting($0.answered))
                } ?? plan.resume
                plans.append(plan)
                floor = max(floor ?? 0, scanLevel)
            }
            if floor.map({ group.level > $0 }) ?? true {
                plans.append(StartPlan(group: group, floor: floor, level: group.level))
            }
        }
        for index in plans.indices where plans.filter({ $0.group.topic == plans[index].group.topic }).count > 1 {
            plans[index].firstSegment = nil
        }
        return plans
    }
}

import TokenStore
import Vocabulary

/// What a scan's checkpoint records: each started pass as the store keeps it — one record per
/// pass, holding its FCM window beside the other when its Android phones are scanned apart.
extension StartScanner {
    /// The started passes' progress as the store keeps it, read together, and the answers they
    /// record (their room in the gates goes back once these are written: `settle`).
    func checkpoint() -> (progress: [StartProgress], answers: FanoutSink.Answers) {
        let answers = sink.takeAnswers(including: plans.filter { startedWindows.contains($0.window) }.map(\.window))
        return (progress(answers.checkpoints), answers)
    }

    /// The records of the started passes among `checkpoints` (a pass with an FCM window has both
    /// of its windows there, or neither: the sink takes twins together), in pass order — later
    /// passes of one topic overwrite earlier ones.
    func progress(_ checkpoints: [(window: Int, checkpoint: ScanWindow.Checkpoint)]) -> [StartProgress] {
        guard !checkpoints.isEmpty else { return [] }
        let byWindow = Dictionary(checkpoints, uniquingKeysWith: { $1 })
        return plans.compactMap { plan in
            guard let main = byWindow[plan.window] else { return nil }
            let fcm = plan.androidWindow.flatMap { byWindow[$0] }
            precondition((plan.androidWindow == nil) == (fcm == nil), "a pass's two windows are checkpointed together")
            return progress(of: plan, main, android: fcm)
        }
    }

    /// A pass's progress as the store keeps it (nil: its pass has not started).
    func progress(of plan: StartPlan, _ state: ScanWindow.Checkpoint, android: ScanWindow.Checkpoint?) -> StartProgress? {
        guard startedWindows.contains(plan.window) else { return nil }
        let main = part(state, resume: plan.resume)
        var progress = StartProgress(eventKey: event.recordKey, topic: plan.group.topic, app: event.app.text, environment: event.environment,
                                     doneLevel: plan.floor, scanLevel: plan.level, completed: main.completed, submitted: main.submitted,
                                     answered: main.answered, offWire: main.offWire, updatedAt: WallClock.milliseconds(),
                                     answerLog: state.answerLog)
        if let android {
            let fcm = part(android, resume: plan.androidResume)
            progress.android = StartProgress.ProviderProgress(completed: fcm.completed, submitted: fcm.submitted, answered: fcm.answered,
                                                              offWire: fcm.offWire)
        }
        return progress
    }

    /// One window's part of a record. A resumed scan that has not yet passed the end of the
    /// earlier run's window must keep that window (its end, its answers, what waited off the wire
    /// and is not sent again yet): a crash now would otherwise forget that those pushes went out,
    /// and the next run would send them again — or count unknown a push that provably never
    /// arrived. (Its answers go into every checkpoint that holds the whole set; one that writes
    /// only the answers since the last keeps the segment that holds them.)
    private func part(_ state: ScanWindow.Checkpoint, resume: StartPlan.Resume)
        -> (completed: [UInt8], submitted: [UInt8], answered: [UInt64], offWire: [UInt64]) {
        var submitted = state.submitted
        var answered = state.answered
        var offWire = state.offWire
        if !resume.oldSubmitted.isEmpty, !ScanWindow.precedesOrEquals(resume.oldSubmitted, submitted) {
            submitted = resume.oldSubmitted
            if state.isWhole { answered += resume.oldAnswered }
            offWire += resume.oldOffWire.subtracting(resentOffWire)
        }
        return (state.completed, submitted, answered, offWire)
    }
}

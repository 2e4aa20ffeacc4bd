import TokenStore
import Vocabulary

/// What a scan's checkpoint records: each started pass's window as the store keeps it.
extension StartScanner {
    /// The started passes' progress as the store keeps it, read together, and the answers they
    /// record (their room in the gate goes back once these are written: `settle`).
    func checkpoint() -> (progress: [StartProgress], released: Int) {
        let answers = sink.takeAnswers(including: plans.filter { startedWindows.contains($0.window) }.map(\.window))
        return (answers.checkpoints.compactMap { progress(of: $0.window, $0.checkpoint) }, answers.released)
    }

    /// A window's progress as the store keeps it (nil: its pass has not started).
    func progress(of window: Int, _ state: ScanWindow.Checkpoint) -> StartProgress? {
        guard startedWindows.contains(window), let plan = plans.first(where: { $0.window == window }) else { return nil }
        var submitted = state.submitted
        var answered = state.answered
        var offWire = state.offWire
        // A resumed pass that has not yet passed the end of the earlier run's window must keep
        // that window (its end, its answers, what waited off the wire and is not sent again yet):
        // a crash now would otherwise forget that those pushes went out, and the next run would
        // send them again — or count unknown a push that provably never arrived.
        // (Its answers go into every checkpoint that holds the whole set; one that writes only
        // the answers since the last keeps the segment that holds them.)
        if !plan.oldSubmitted.isEmpty, !ScanWindow.precedesOrEquals(plan.oldSubmitted, submitted) {
            submitted = plan.oldSubmitted
            if state.isWhole { answered += plan.oldAnswered }
            offWire += plan.oldOffWire.subtracting(resentOffWire)
        }
        return StartProgress(eventKey: event.recordKey, topic: plan.group.topic, app: event.app.text, environment: event.environment,
                             doneLevel: plan.floor, scanLevel: plan.level, completed: state.completed, submitted: submitted,
                             answered: answered, offWire: offWire, updatedAt: WallClock.milliseconds(), answerLog: state.answerLog)
    }
}

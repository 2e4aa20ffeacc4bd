import APNs
import IO
import Sender
import TokenStore
import Vocabulary

/// The per-target decision of a start pass: for each target of a batch, send (its start, its
/// Android start, or the fallback alert), or not — another shard's, below the floor, answered
/// before a restart, in doubt from one, already handled, over the start budget, past the deadline
/// — and into which window and slot it goes.
extension StartScanner {
    /// Reads one batch of `part`'s scan, decides per target, and hands out what it holds (the
    /// last chunk too: a part's chunk never waits for the other part's turn).
    func step(_ part: inout Part, plan: StartPlan, groupPushes: EventPushes, counts lanes: inout PerLane<ScanCounts>) throws(FanoutError) {
        checkShouldStop()
        if stopped != nil { return }
        let more: Bool
        do { more = try part.scan.next(into: &batch) } catch { throw FanoutError(.store, error.description) }
        guard more else {
            part.done = true
            return
        }
        // Android's own stop (its breaker, its halted pool) ends its starts, not the event's.
        let androidStopped = android == nil || sink.androidStopped != nil
        for index in 0..<batch.count {
            if stopped != nil { return }
            let minLevel = batch.minLevels[index]
            if let floor = plan.floor, minLevel <= floor { continue }
            let kind = batch.kinds[index]
            let lane = Lane(kind: kind)
            let broadcast = batch.broadcast[index]
            let tokenSlice = batch.token(at: index)
            guard let (token, hash) = tokenSlice.withUnsafeBytes({ raw in
                DeviceToken(raw).map { ($0, TokenTally.hash(kind: kind.rawValue, token: raw)) }
            }) else { continue }
            if let shard = event.shard, !shard.contains(hash) { continue }  // another shard's phone
            var entry = ScanWindow.Entry(token: token, minLevel: minLevel, kindByte: kind.rawValue | (broadcast ? 0x80 : 0), hash: hash)
            // Alerts go only to installations without a push-to-start token: the others get (or
            // got) the Live Activity itself.
            if kind == .device {
                guard event.fallbackAlert != nil, try !hasPushToStartToken(device: tokenSlice) else { continue }
            }
            // A group whose pushes this phone's lane cannot carry: counted, not sent to, and not
            // marked handled — a later group that can carry them still may. (Android stopped:
            // counted below, as every Android phone from then on.)
            if groupPushes.refusals[lane] != nil, lane != .fcm || !androidStopped {
                if !tally.isHandled(hash), passedOverByRefusedGroup.insert(hash).inserted { lanes[lane].skipped += 1 }
                continue
            }
            // Carried by this group after all: no longer skipped (counted where it ends now).
            if !passedOverByRefusedGroup.isEmpty, passedOverByRefusedGroup.remove(hash) != nil { lanes[lane].skipped -= 1 }
            let group: PushGroup?
            let slot: Int
            if kind == .pushToStart {
                group = broadcast ? groupPushes.startBroadcastCapable : groupPushes.startPlain
                slot = plan.startSlot
            } else if kind == .fcm {
                // An Android phone: its Live Update start through FCM. Without a lane (no
                // `android` member for the app) or once Android stopped, counted, not sent.
                guard !androidStopped, let start = groupPushes.androidStart else {
                    if !tally.isHandled(hash) { tally.markHandled(hash); lanes[lane].skipped += 1 }
                    continue
                }
                group = start
                slot = plan.androidSlot
            } else {
                guard let fallback = groupPushes.fallback else { continue }
                group = fallback
                slot = plan.fallbackSlot
            }
            if part.inOldWindow {
                if ScanWindow.precedesOrEquals(ScanWindow.position(of: entry), part.resume.oldSubmitted) {
                    if part.resume.oldAnswered.contains(hash) {
                        lanes[lane].answeredBeforeRestart += 1
                        entry.answered = true
                    } else if part.resume.oldOffWire.contains(hash) {
                        // Answered "not processed" and waiting for its back-off resend when
                        // the earlier run died: on no connection, so sending it now cannot
                        // put a second start on the phone. Kept as off the wire in this run's
                        // checkpoints until this send is on record (`resentOffWire`).
                        lanes[lane].resentAfterBackOff += 1
                        pendingOffWire.append(hash)
                    } else if event.onUnknown == .report {
                        // In flight when the earlier run died: it may have arrived. A second
                        // start would put a second activity on the phone.
                        lanes[lane].unknown += 1
                        entry.answered = true
                    } else {
                        // `resend`: sent again, maybe a second start on the phone; the report says so.
                        lanes[lane].resentAfterUnknown += 1
                    }
                    tally.markHandled(hash)
                    try add(ChunkTarget(entry: entry, group: entry.answered ? nil : group, slot: slot), part: part)
                    continue
                }
                part.inOldWindow = false
            }
            if tally.isHandled(hash) {
                lanes[lane].duplicatesAvoided += 1
                entry.answered = true
                try add(ChunkTarget(entry: entry, group: nil, slot: slot), part: part)
                continue
            }
            tally.markHandled(hash)
            // The start budget counts Android starts too: a Live Update is as loud as an activity.
            if kind != .device, let limit = startLimit, tally.recentStarts(hash) >= limit {
                lanes[lane].skippedByBudget += 1
                entry.answered = true
                try add(ChunkTarget(entry: entry, group: nil, slot: slot), part: part)
                continue
            }
            if MonotonicInstant.now() >= deadline {
                // Past the event's deadline nothing more is sent; what was not is expired.
                lanes[lane].expired += 1
                continue
            }
            try add(ChunkTarget(entry: entry, group: group, slot: slot), part: part)
        }
        try flush(window: part.window, gate: part.gate)
    }

    /// Whether the installation holding this device token also has a push-to-start token.
    private func hasPushToStartToken(device token: ArraySlice<UInt8>) throws(FanoutError) -> Bool {
        do {
            guard let owner = try store.tokenOwner(app: event.app.text, environment: event.environment, kind: .device, token: Array(token)),
                  let installation = try store.installation(id: owner.installationID) else { return false }
            return installation.pushToStartToken != nil
        } catch {
            throw FanoutError(.store, error.description)
        }
    }
}

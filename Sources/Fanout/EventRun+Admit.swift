import APNs
import Crypto
import IO
import TokenStore

extension EventRun {
    /// Phase 1: what the key's records say of this serial (`EventAdmission`, in the CLI's words),
    /// then the serial's record, written before anything is sent.
    func admit() throws(FanoutError) -> Admission {
        let records = try storeCall { () throws(StoreError) in try store.eventRecords(eventKey: event.recordKey) }
        let bodyHash = SHA256.hash(event.canonicalJSON)
        var earlier: FanoutReport?
        var firstStartedAt = startedAt
        switch EventAdmission(serial: event.serial, bodyHash: bodyHash).decision(given: records.serials) {
        case let .superseded(by: newer):
            throw FanoutError(.invalidEvent, "event '\(event.key)' serial \(event.serial) is older than serial \(newer), which was already sent; send a higher serial")
        case .conflict:
            throw FanoutError(.invalidEvent, "event '\(event.key)' serial \(event.serial) was already sent with a different body; give the new content a higher serial")
        case let .alreadySent(same):
            return .alreadySent(FanoutReport(json: same.report) ?? FanoutReport())
        case let .resume(same):
            // Interrupted or stopped: resume, adding to what it did. A record without a report was
            // only accepted (the daemon records an event when it takes it, before it runs).
            earlier = same.report.isEmpty ? nil : FanoutReport(json: same.report) ?? FanoutReport()
            firstStartedAt = same.startedAt
        case .new:
            break
        }
        // Recorded before anything is sent: a crash from here on is resumed, never repeated blind.
        // A run that started records a report that counts it (empty so far: `FanoutReport()` is
        // one run), so a resumed run counts it in `runs`; a resumed run counts itself too, or
        // every killed run after the first would be forgotten (11 kills reported `runs` 2).
        var startedReport = earlier ?? FanoutReport()
        if earlier != nil { startedReport.runs += 1 }
        let record = EventSerialRecord(eventKey: event.recordKey, serial: event.serial, bodyHash: bodyHash, phase: .sending,
                                       startedAt: firstStartedAt, updatedAt: startedAt, report: startedReport.json, body: event.canonicalJSON)
        try storeCall { () throws(StoreError) in _ = try store.write([.putEventSerial(record)], durable: false) }
        let clock = try clock(firstStartedAt: firstStartedAt)
        return .run(Admitted(serials: records.serials, starts: records.starts, record: record, earlier: earlier, clock: clock))
    }

    /// The event's clock: its deadline and expiration run from its first run, not this one.
    private func clock(firstStartedAt: UInt64) throws(FanoutError) -> EventClock {
        let deadlineMs = firstStartedAt + UInt64(event.deadline.milliseconds)
        let deadline = runStart + .milliseconds(Int64(deadlineMs) - Int64(startedAt))
        let timestamp = event.timestamp ?? Int64(startedAt / 1000)
        let expiration: Expiration
        do { expiration = try Expiration(epochSeconds: event.expiration ?? Int64(deadlineMs / 1000)) } catch {
            throw FanoutError(.invalidEvent, "expiration: \(error.message)")
        }
        return EventClock(deadline: deadline, timestamp: timestamp, expiration: expiration)
    }
}

import APNs
import IO
import TokenStore
import Vocabulary

/// The phones an update or end of this serial has answers for, written to the store while it
/// sends (`UpdateAnswers`: every 200 ms while it hands out and while it waits for the answers,
/// and at the end): a run that resumes the serial after a crash or a stop skips them,
/// counted `answeredBeforeRestart` in their lane, and sends again only to phones without an answer
/// (issue 32: a resumed update sent to every phone again). Used on the run's thread only.
final class UpdateLedger {
    private let store: TokenStore
    private let recordKey: String
    private let serial: UInt32
    /// What earlier runs of this serial recorded.
    private let earlier: Set<UInt64>
    private var nextSegment: UInt32

    /// Reads what earlier runs of the serial recorded (one seek: nothing for a serial's first run).
    init(store: TokenStore, event: FanoutEvent) throws(FanoutError) {
        self.store = store
        recordKey = event.recordKey
        serial = event.serial
        do { (earlier, nextSegment) = try store.updateAnswers(eventKey: event.recordKey, serial: event.serial) } catch {
            throw FanoutError(.store, error.description)
        }
    }

    /// A phone's key in the ledger: its token's hash with its lane's kind byte (an activity update
    /// token's as the shard split hashes it).
    static func hash(_ lane: Lane, token: UnsafeRawBufferPointer) -> UInt64 {
        TokenTally.hash(kind: lane == .fcm ? TokenKind.fcm.rawValue : 0, token: token)
    }

    /// Whether an earlier run of this serial had an answer for the phone.
    func answeredBefore(_ hash: UInt64) -> Bool { earlier.contains(hash) }

    /// Writes the sink's answers since the last write, once `interval` has passed since it (a kill
    /// forgets at most that much of them): called while handing out and while waiting for answers.
    func recordIfDue(_ sink: FanoutSink) throws(FanoutError) {
        let now = MonotonicInstant.now()
        guard now - lastWrite >= Self.interval else { return }
        lastWrite = now
        try record(sink.takeUpdateAnswers())
    }

    static let interval: Duration = .milliseconds(200)
    private var lastWrite = MonotonicInstant.now()

    /// Writes `hashes` (answers since the last write) as the next segment; nothing when empty.
    /// Not fsynced: it survives `kill -9`, and the serial's final record syncs it with itself.
    func record(_ hashes: [UInt64]) throws(FanoutError) {
        guard !hashes.isEmpty else { return }
        let answers = UpdateAnswers(eventKey: recordKey, serial: serial, segment: nextSegment, hashes: hashes, updatedAt: WallClock.milliseconds())
        do { try store.write([.putUpdateAnswers(answers)], durable: false) } catch { throw FanoutError(.store, error.description) }
        nextSegment &+= 1
    }
}

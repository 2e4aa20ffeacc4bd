import APNs

/// What the store remembers of the events it fanned out, in the `events` database. Its records:
///
/// - one `EventSerialRecord` per event key and serial: which body it had (a repeat with the same
///   body is "already sent", another body under the same serial is refused), whether it finished,
///   and its report;
/// - one `StartProgress` per event key and topic: how far the push-to-starts of that topic went.
///   All serials of a key share it, because a phone gets one start per event, not per serial.
///
/// Keys: event key NUL "s" serial (u32 big-endian) · event key NUL "t" topic · event key NUL "a"
/// topic NUL segment (u32 big-endian, `AnswerLog`) · event key NUL "u" serial segment (an update's
/// answers, `UpdateAnswers`). Event keys and topics never hold a NUL
/// (`StoreLimits.checkName`), so one key's records sort together.
public struct EventSerialRecord: Sendable, Equatable {
    public enum Phase: UInt8, Sendable {
        /// Fanning out, or interrupted (a crash): running the event again resumes it.
        case sending = 1
        /// Every target has its outcome.
        case done = 2
        /// Stopped on purpose (the circuit breaker, a halted pool): running it again resumes it.
        case stopped = 3
    }

    public var eventKey: String
    public var serial: UInt32
    /// SHA-256 of the event's canonical JSON.
    public var bodyHash: [UInt8]
    public var phase: Phase
    /// Milliseconds since 1970.
    public var startedAt: UInt64
    public var updatedAt: UInt64
    /// The report as JSON, as of the last checkpoint (the whole report once `done`).
    public var report: [UInt8]
    /// The event itself (canonical JSON): a later update that widens the area starts the new
    /// phones with the start's attributes and alert.
    public var body: [UInt8]

    public init(eventKey: String, serial: UInt32, bodyHash: [UInt8], phase: Phase, startedAt: UInt64, updatedAt: UInt64,
                report: [UInt8] = [], body: [UInt8] = []) {
        self.eventKey = eventKey
        self.serial = serial
        self.bodyHash = bodyHash
        self.phase = phase
        self.startedAt = startedAt
        self.updatedAt = updatedAt
        self.report = report
        self.body = body
    }

    var key: [UInt8] { EventRecordKey.serial(eventKey: eventKey, serial: serial) }

    var encoded: [UInt8] {
        var writer = RecordWriter(capacity: 64 + report.count + body.count)
        writer.data(bodyHash)
        writer.uint8(phase.rawValue)
        writer.uint64(startedAt)
        writer.uint64(updatedAt)
        writer.data(report)
        writer.data(body)
        return writer.bytes
    }

    init(eventKey: String, serial: UInt32, decoding bytes: UnsafeRawBufferPointer) throws(StoreError) {
        var reader = RecordReader(bytes, what: "event '\(eventKey)' serial \(serial)")
        self.eventKey = eventKey
        self.serial = serial
        bodyHash = try reader.data()
        guard let phase = Phase(rawValue: try reader.uint8()) else {
            throw StoreError.corrupt(path: "", detail: "event '\(eventKey)' serial \(serial) has an unknown phase")
        }
        self.phase = phase
        startedAt = try reader.uint64()
        updatedAt = try reader.uint64()
        report = try reader.data()
        body = try reader.data()
        guard reader.isAtEnd else { throw StoreError.corrupt(path: "", detail: "event '\(eventKey)' serial \(serial) has trailing bytes") }
    }
}

/// How far the push-to-starts of one topic went under one event key, so a restart (or the next
/// serial) neither starts an activity twice nor forgets a phone.
///
/// A topic's targets are scanned in a fixed order (`TopicScan`). Everything with a minimum level
/// at or below `doneLevel` has been handled. A scan at `scanLevel` for the levels above
/// `doneLevel` may be under way: every target up to `completed` has its outcome; targets after it
/// up to `submitted` were handed to APNs, and of those the ones whose token hash is in `answered`
/// got an answer; nothing after `submitted` was sent. `submitted` is written before the pushes go
/// out, so a `kill -9` can lose answers but never hide a sent push.
public struct StartProgress: Sendable, Equatable {
    public var eventKey: String
    public var topic: String
    /// Whose topic it is (what a rescan of the handled targets reads).
    public var app: String
    public var environment: Environment
    /// Every target with a minimum level at or below this was handled (nil: none yet).
    public var doneLevel: UInt8?
    /// The level of the scan under way (nil: no scan under way).
    public var scanLevel: UInt8?
    /// `TopicWatermark` bytes: every target up to here has its outcome (empty: none).
    public var completed: [UInt8]
    /// `TopicWatermark` bytes: nothing after here was sent (empty: nothing was).
    public var submitted: [UInt8]
    /// Token hashes answered between `completed` and `submitted`.
    public var answered: [UInt64]
    /// Token hashes between `completed` and `submitted` answered "not processed, send again"
    /// (429/5xx, a refused stream) and waiting for that resend, on no connection: the run that
    /// resumes sends them whatever the event's `onUnknown` says.
    public var offWire: [UInt64]
    /// Milliseconds since 1970.
    public var updatedAt: UInt64
    /// How `answered` is written and was read: segments (see `AnswerLog`); nil: the whole set in
    /// this record. Not part of the record's own bytes.
    public var answerLog: AnswerLog?
    /// The scan's Android (FCM) targets, when they were scanned apart from the others (an app
    /// with an Android side: its FCM tokens sort after every APNs token, and scanned in one order
    /// they would wait for all of them). Then the fields above cover only the other kinds, and
    /// this the FCM tokens; nil: the fields above cover every kind (an iOS-only app, or a record
    /// from before). Kept in the record as the `fcm` lane's part (StartProgress+Format.swift).
    public var android: ProviderProgress?

    /// How far one provider's targets of a scan went: `StartProgress`'s fields, for that provider.
    public struct ProviderProgress: Sendable, Equatable {
        public var completed: [UInt8]
        public var submitted: [UInt8]
        /// Always the whole set (no answer log).
        public var answered: [UInt64]
        public var offWire: [UInt64]

        public init(completed: [UInt8] = [], submitted: [UInt8] = [], answered: [UInt64] = [], offWire: [UInt64] = []) {
            self.completed = completed
            self.submitted = submitted
            self.answered = answered
            self.offWire = offWire
        }
    }

    public init(eventKey: String, topic: String, app: String, environment: Environment, doneLevel: UInt8? = nil, scanLevel: UInt8? = nil, completed: [UInt8] = [],
                submitted: [UInt8] = [], answered: [UInt64] = [], offWire: [UInt64] = [], updatedAt: UInt64, answerLog: AnswerLog? = nil,
                android: ProviderProgress? = nil) {
        self.eventKey = eventKey
        self.topic = topic
        self.app = app
        self.environment = environment
        self.doneLevel = doneLevel
        self.scanLevel = scanLevel
        self.completed = completed
        self.submitted = submitted
        self.answered = answered
        self.offWire = offWire
        self.updatedAt = updatedAt
        self.answerLog = answerLog
        self.android = android
    }

    var key: [UInt8] { EventRecordKey.topic(eventKey: eventKey, topic: topic) }

    // Its record's bytes and their reading: StartProgress+Format.swift.
}

/// A record of the `events` database, whichever kind its key says it is.
public enum EventStoreRecord: Sendable, Equatable {
    case serial(EventSerialRecord)
    case start(StartProgress)
    /// A segment of a start record's answered hashes (`AnswerLog`): kept and swept with it.
    case answers(eventKey: String, topic: String, segment: UInt32, hashes: [UInt64])
    /// A segment of the phones an update or end of a serial has answers for.
    case updateAnswers(UpdateAnswers)

    /// Records are kept this long after their last update, to recognise a repeated event (and to
    /// count a phone's recent starts).
    public static let retentionMilliseconds: UInt64 = 7 * 24 * 3600 * 1000

    /// When it was last written (nil: a segment, which goes with its start record).
    var updatedAt: UInt64? {
        switch self {
        case let .serial(record): record.updatedAt
        case let .start(progress): progress.updatedAt
        case .answers: nil
        case let .updateAnswers(answers): answers.updatedAt
        }
    }

    init(key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) throws(StoreError) {
        guard let nul = key.firstIndex(of: 0), nul + 1 < key.count else {
            throw StoreError.corrupt(path: "", detail: "an event record key is malformed")
        }
        let eventKey = String(decoding: key[..<nul], as: UTF8.self)
        let rest = key[(nul + 2)...]
        switch key[nul + 1] {
        case UInt8(ascii: "s") where rest.count == 4:
            let serial = rest.reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
            self = .serial(try EventSerialRecord(eventKey: eventKey, serial: serial, decoding: value))
        case UInt8(ascii: "t"):
            self = .start(try StartProgress(eventKey: eventKey, topic: String(decoding: rest, as: UTF8.self), decoding: value))
        case UInt8(ascii: "a") where rest.count > 5 && rest[rest.endIndex - 5] == 0:
            let topic = String(decoding: rest[..<(rest.endIndex - 5)], as: UTF8.self)
            let segment = rest[(rest.endIndex - 4)...].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
            let what = "answer segment \(segment) of event '\(eventKey)' topic '\(topic)'"
            self = .answers(eventKey: eventKey, topic: topic, segment: segment, hashes: try AnswerLog.decode(value, what: what))
        case UInt8(ascii: "u") where rest.count == 8:
            let serial = rest.prefix(4).reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
            let segment = rest.suffix(4).reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
            self = .updateAnswers(try UpdateAnswers(eventKey: eventKey, serial: serial, segment: segment, decoding: value))
        default:
            throw StoreError.corrupt(path: "", detail: "event '\(eventKey)' has a record of an unknown kind (written by a newer sokuho?)")
        }
    }
}

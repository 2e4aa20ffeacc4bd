/// One segment of the phones an update or end of one serial has answers for: their token hashes
/// (`TokenTally.hash`, whose kind byte keeps the lanes apart), written while it sends, before each
/// chunk and at its end — so a run of the same serial that resumes it (a crash, a stop) sends
/// again only to phones without an answer (issue 32: a resumed update sent everything again).
/// Not fsynced, like start checkpoints: it survives `kill -9`, which is what it guards against.
///
/// Key: event key NUL "u" serial (u32 big-endian) segment (u32 big-endian), so a serial's segments
/// sort together after the key's serial records. Removed when the serial finishes (`done`), else
/// kept for `EventStoreRecord.retentionMilliseconds` after it was written, and removed with the
/// key's other records. A node's own: not replicated
/// (a cluster resumes a shard's update on the node whose store has it, or sends it again).
public struct UpdateAnswers: Sendable, Equatable {
    /// The event's record key (a cluster shard's own, `FanoutEvent.recordKey`).
    public var eventKey: String
    public var serial: UInt32
    public var segment: UInt32
    public var hashes: [UInt64]
    /// Milliseconds since 1970.
    public var updatedAt: UInt64

    public init(eventKey: String, serial: UInt32, segment: UInt32, hashes: [UInt64], updatedAt: UInt64) {
        self.eventKey = eventKey
        self.serial = serial
        self.segment = segment
        self.hashes = hashes
        self.updatedAt = updatedAt
    }

    var key: [UInt8] { EventRecordKey.updateAnswers(eventKey: eventKey, serial: serial) + EventRecordKey.bigEndian(segment) }

    var encoded: [UInt8] {
        var writer = RecordWriter(capacity: 16 + hashes.count * 8)
        writer.uint64(updatedAt)
        writer.data(AnswerLog.encode(hashes))
        return writer.bytes
    }

    init(eventKey: String, serial: UInt32, segment: UInt32, decoding bytes: UnsafeRawBufferPointer) throws(StoreError) {
        let what = "update answers \(segment) of event '\(eventKey)' serial \(serial)"
        var reader = RecordReader(bytes, what: what)
        self.eventKey = eventKey
        self.serial = serial
        self.segment = segment
        updatedAt = try reader.uint64()
        hashes = try AnswerLog.decode(try reader.data(), what: what)
        guard reader.isAtEnd else { throw StoreError.corrupt(path: "", detail: "\(what) has trailing bytes") }
    }
}

/// How far the fan-out of one event got, so a restart resumes after the last acknowledged target
/// (`watermark`, see `TopicWatermark`) and a repeated event key is not sent twice.
public struct EventProgress: Sendable, Equatable {
    public enum Phase: UInt8, Sendable {
        case sending = 1
        case done = 2
        case cancelled = 3
    }

    public var eventKey: String
    public var phase: Phase
    /// Opaque resume position (a `TopicWatermark`'s bytes); empty before the first batch.
    public var watermark: [UInt8]
    public var delivered: UInt64
    public var failed: UInt64
    /// Milliseconds since 1970 after which the event is not sent any more.
    public var deadline: UInt64
    public var updatedAt: UInt64

    public init(eventKey: String, phase: Phase, watermark: [UInt8] = [], delivered: UInt64 = 0, failed: UInt64 = 0,
                deadline: UInt64, updatedAt: UInt64) {
        self.eventKey = eventKey
        self.phase = phase
        self.watermark = watermark
        self.delivered = delivered
        self.failed = failed
        self.deadline = deadline
        self.updatedAt = updatedAt
    }

    /// Progress records are kept this long after the deadline, to recognise a repeated event key.
    public static let retentionMilliseconds: UInt64 = 7 * 24 * 3600 * 1000

    var encoded: [UInt8] {
        var writer = RecordWriter()
        writer.uint8(phase.rawValue)
        writer.data(watermark)
        writer.uint64(delivered)
        writer.uint64(failed)
        writer.uint64(deadline)
        writer.uint64(updatedAt)
        return writer.bytes
    }

    init(eventKey: String, decoding bytes: UnsafeRawBufferPointer) throws(StoreError) {
        var reader = RecordReader(bytes, what: "event '\(eventKey)'")
        self.eventKey = eventKey
        guard let phase = Phase(rawValue: try reader.uint8()) else {
            throw StoreError.corrupt(path: "", detail: "event '\(eventKey)' has an unknown phase")
        }
        self.phase = phase
        watermark = try reader.data()
        delivered = try reader.uint64()
        failed = try reader.uint64()
        deadline = try reader.uint64()
        updatedAt = try reader.uint64()
    }
}

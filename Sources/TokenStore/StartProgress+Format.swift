/// The start checkpoint's record: the same bytes in the store, in a cluster's Redis copy
/// (`recordBytes`) and in the replicated writes, so one format version covers all three.
///
/// Format 2 (now): a 0 byte, the version, the scan's common fields, then one part per provider
/// lane — a lane byte (1 APNs, 2 FCM), its `completed` and `submitted` watermarks, its answered
/// and off-the-wire hashes. The APNs part is always there; an FCM part only when the scan had
/// one (`android`). Format 1 (before versions) began with the app's length, never 0: it still
/// reads, with the APNs fields and an optional Android part appended after `updatedAt`.
///
/// A record of a later format, or with a lane this sokuho does not know, is refused naming both
/// versions — never misread: resuming from a checkpoint read wrong would start phones twice.
extension StartProgress {
    /// The format this sokuho writes, and the latest it reads.
    public static let formatVersion: UInt8 = 2
    /// First byte of a versioned record (format 1's first byte is the app's length, at least 1).
    static let versionedMarker: UInt8 = 0

    /// A provider lane's byte in the record.
    enum LaneByte: UInt8 {
        case apns = 1
        case fcm = 2
    }

    /// The record's bytes: with an answer log, without the answers (they go to their segment).
    var encoded: [UInt8] {
        let answered = answerLog == nil ? self.answered : []
        let parts = [(LaneByte.apns, ProviderProgress(completed: completed, submitted: submitted, answered: answered, offWire: offWire))]
            + (android.map { [(LaneByte.fcm, $0)] } ?? [])
        let hashes = parts.reduce(0) { $0 + $1.1.answered.count + $1.1.offWire.count }
        var writer = RecordWriter(capacity: 128 + hashes * 8)
        writer.uint8(Self.versionedMarker)
        writer.uint8(Self.formatVersion)
        writer.string(app)
        writer.uint8(environment.storeByte)
        writer.uint8(doneLevel == nil ? 0 : 1)
        writer.uint8(doneLevel ?? 0)
        writer.uint8(scanLevel == nil ? 0 : 1)
        writer.uint8(scanLevel ?? 0)
        writer.uint64(updatedAt)
        writer.length(parts.count)
        for (lane, part) in parts {
            writer.uint8(lane.rawValue)
            writer.data(part.completed)
            writer.data(part.submitted)
            writer.length(part.answered.count)
            for hash in part.answered { writer.uint64(hash) }
            writer.length(part.offWire.count)
            for hash in part.offWire { writer.uint64(hash) }
        }
        return writer.bytes
    }

    init(eventKey: String, topic: String, decoding bytes: UnsafeRawBufferPointer) throws(StoreError) {
        let what = "start progress of event '\(eventKey)' topic '\(topic)'"
        var reader = RecordReader(bytes, what: what)
        self.init(eventKey: eventKey, topic: topic, app: "", environment: .production, updatedAt: 0)
        if bytes.first == Self.versionedMarker {
            _ = try reader.uint8()
            let version = try reader.uint8()
            guard version == Self.formatVersion else {
                throw StoreError.invalid("\(what) is in checkpoint format \(version), and this sokuho reads formats 1 to \(Self.formatVersion)"
                                         + (version > Self.formatVersion ? ": a newer sokuho wrote it; upgrade this one to the version the other nodes run" : ""))
            }
            try readCommon(&reader, updatedAtLast: false)
            var seen: Set<UInt8> = []
            for _ in 0..<(try reader.length()) {
                let byte = try reader.uint8()
                guard let lane = LaneByte(rawValue: byte) else {
                    throw StoreError.invalid("\(what) has a part for provider lane \(byte), which this sokuho does not know: a newer sokuho wrote it")
                }
                guard seen.insert(byte).inserted else { throw StoreError.corrupt(path: "", detail: "\(what) has two parts for one lane") }
                let part = try Self.readPart(&reader)
                switch lane {
                case .apns: (completed, submitted, answered, offWire) = (part.completed, part.submitted, part.answered, part.offWire)
                case .fcm: android = part
                }
            }
        } else {
            try readFormatOne(&reader)
        }
        guard reader.isAtEnd else { throw StoreError.corrupt(path: "", detail: "\(what) has trailing bytes") }
    }

    /// App, environment, done and scan levels (and in format 1, the APNs part and `updatedAt` between them).
    private mutating func readCommon(_ reader: inout RecordReader, updatedAtLast: Bool) throws(StoreError) {
        app = try reader.string()
        environment = try reader.environment()
        let hasDone = try reader.uint8()
        let done = try reader.uint8()
        doneLevel = hasDone == 0 ? nil : done
        let hasScan = try reader.uint8()
        let scan = try reader.uint8()
        scanLevel = hasScan == 0 ? nil : scan
        if !updatedAtLast { updatedAt = try reader.uint64() }
    }

    private static func readPart(_ reader: inout RecordReader) throws(StoreError) -> ProviderProgress {
        var part = ProviderProgress(completed: try reader.data(), submitted: try reader.data())
        let answered = try reader.length()
        part.answered.reserveCapacity(min(answered, 1 << 16))
        for _ in 0..<answered { part.answered.append(try reader.uint64()) }
        let offWire = try reader.length()
        part.offWire.reserveCapacity(min(offWire, 1 << 16))
        for _ in 0..<offWire { part.offWire.append(try reader.uint64()) }
        return part
    }

    /// Format 1: the common fields, the APNs watermarks and answers, `updatedAt`, then (only when
    /// not empty, or before an Android part) the off-the-wire hashes, then the Android part.
    private mutating func readFormatOne(_ reader: inout RecordReader) throws(StoreError) {
        try readCommon(&reader, updatedAtLast: true)
        completed = try reader.data()
        submitted = try reader.data()
        let count = try reader.length()
        answered.reserveCapacity(min(count, 1 << 16))
        for _ in 0..<count { answered.append(try reader.uint64()) }
        updatedAt = try reader.uint64()
        if !reader.isAtEnd {
            let count = try reader.length()
            for _ in 0..<count { offWire.append(try reader.uint64()) }
        }
        // The Android part is laid out as a format-2 part without its lane byte.
        if !reader.isAtEnd { android = try Self.readPart(&reader) }
    }
}

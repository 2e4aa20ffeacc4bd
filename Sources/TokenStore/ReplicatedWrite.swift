import APNs

/// The binary form of the store changes a cluster's nodes share (the `ops` field of an entry of
/// the registration stream, and the value of an outbox record): a version byte, the number of
/// operations, then each operation as a tag byte and its fields in `RecordWriter`'s layout. Records
/// that have a stored layout (activities, channels, event serials, start progress) are embedded in
/// exactly that layout, so the stream and the store cannot disagree about them.
///
/// Imports (`registerBatch`) and sweeps (`sweepExpired`) are not replicated: an import is a bulk
/// load each node (or a backup) takes itself, and every node sweeps its own store by its own clock.
///
/// The decoder is strict: an unknown version or tag, a truncated field, trailing bytes or an
/// operation that fails `WriteOperation.validate` refuses the whole encoding, so a bad entry is
/// skipped whole, never half-applied.
public enum ReplicatedWrite {
    /// Bumped when the layout changes; a node refuses (and counts) entries of another version
    /// rather than guessing, so nodes are upgraded together. Entries carrying a start checkpoint
    /// are written in this one (the checkpoint in format 2, StartProgress+Format.swift): a node
    /// from before refuses them by version, naming it, rather than calling the checkpoint damaged.
    public static let version: UInt8 = 3
    /// Entries with an FCM token but no start checkpoint.
    static let versionWithFCM: UInt8 = 2
    /// Entries without an Android (FCM) token are still written in version 1, whose layout is
    /// the same: a node from before Android support takes them during a rolling upgrade, and
    /// refuses an entry with an FCM token by its version ("run the same Sokuho version on every
    /// node") rather than half-applying the batch or reading kind 3 as garbage.
    static let versionWithoutFCM: UInt8 = 1

    enum Tag: UInt8 {
        case register = 1, removeToken, removeInstallation, putActivity, removeActivity, putChannel, removeChannel,
             putEventSerial, putStartProgress, removeEvent
    }

    /// The encoding of `operations`; those that are not replicated (`isReplicated` false) are left out.
    public static func encode(_ operations: some Sequence<WriteOperation>) -> [UInt8] {
        var body = RecordWriter(capacity: 256)
        var count = 0
        var carriesFCM = false
        var carriesCheckpoint = false
        for operation in operations where operation.isReplicated {
            encode(operation, into: &body)
            count += 1
            carriesFCM = carriesFCM || operation.tokenKind == .fcm
            if case .putStartProgress = operation { carriesCheckpoint = true }
        }
        var writer = RecordWriter(capacity: body.bytes.count + 8)
        writer.uint8(carriesCheckpoint ? version : carriesFCM ? versionWithFCM : versionWithoutFCM)
        writer.length(count)
        writer.bytes.append(contentsOf: body.bytes)
        return writer.bytes
    }

    /// The operations of an encoding, each validated; throws `StoreError.invalid` naming what is wrong.
    public static func decode(_ bytes: [UInt8]) throws(StoreError) -> [WriteOperation] {
        let result: Result<[WriteOperation], StoreError> = bytes.withUnsafeBytes { buffer in
            do throws(StoreError) { return .success(try decode(buffer)) } catch { return .failure(error) }
        }
        return try result.get()
    }

    private static func decode(_ buffer: UnsafeRawBufferPointer) throws(StoreError) -> [WriteOperation] {
        var reader = RecordReader(buffer, what: "replicated write")
        do throws(StoreError) {
            let found = try reader.uint8()
            guard (versionWithoutFCM...version).contains(found) else {
                throw StoreError.invalid("replicated write: version \(found), this Sokuho reads versions \(versionWithoutFCM) to \(version); run the same Sokuho version on every node")
            }
            // Each operation takes at least two bytes: a count above that is a lie, not an allocation to make.
            let count = try reader.length()
            var operations: [WriteOperation] = []
            operations.reserveCapacity(min(count, buffer.count / 2))
            for index in 0..<count {
                let operation = try decodeOperation(&reader)
                do { try operation.validate() } catch {
                    throw StoreError.invalid("replicated write: operation \(index + 1) of \(count): \(error.description)")
                }
                // What no node publishes (an event run alone) is not taken from the stream either.
                guard operation.isReplicated else {
                    throw StoreError.invalid("replicated write: operation \(index + 1) of \(count) is one nodes keep to themselves")
                }
                operations.append(operation)
            }
            guard reader.isAtEnd else { throw StoreError.invalid("replicated write: trailing bytes after \(count) operations") }
            return operations
        } catch {
            if case .corrupt = error { throw StoreError.invalid("replicated write: truncated or malformed") }
            throw error
        }
    }

    private static func encode(_ operation: WriteOperation, into writer: inout RecordWriter) {
        switch operation {
        case let .register(registration, at):
            writer.uint8(Tag.register.rawValue)
            writer.string(registration.installationID)
            writer.string(registration.app)
            writer.uint8(registration.environment.storeByte)
            writer.uint8(registration.kind.rawValue)
            writer.data(registration.token)
            writer.length(registration.topics.count)
            for topic in registration.topics {
                writer.string(topic.name)
                writer.uint8(topic.minLevel)
            }
            optional(registration.secretHash, into: &writer) { $1.data($0) }
            optional(registration.registeredAt, into: &writer) { $1.uint64($0) }
            // nil (keep the stored flag), false, true.
            writer.uint8(registration.broadcast.map { $0 ? 2 : 1 } ?? 0)
            writer.uint64(at)
        case let .removeToken(app, environment, kind, token, registeredBefore):
            writer.uint8(Tag.removeToken.rawValue)
            writer.string(app)
            writer.uint8(environment.storeByte)
            writer.uint8(kind.rawValue)
            writer.data(token)
            optional(registeredBefore, into: &writer) { $1.uint64($0) }
        case let .removeInstallation(id):
            writer.uint8(Tag.removeInstallation.rawValue)
            writer.string(id)
        case let .putActivity(activity):
            writer.uint8(Tag.putActivity.rawValue)
            writer.string(activity.id)
            writer.data(activity.encoded)
        case let .removeActivity(id):
            writer.uint8(Tag.removeActivity.rawValue)
            writer.string(id)
        case let .putChannel(channel):
            writer.uint8(Tag.putChannel.rawValue)
            writer.string(channel.app)
            writer.uint8(channel.environment.storeByte)
            writer.string(channel.name)
            writer.data(channel.encoded)
        case let .removeChannel(app, environment, name):
            writer.uint8(Tag.removeChannel.rawValue)
            writer.string(app)
            writer.uint8(environment.storeByte)
            writer.string(name)
        case let .putEventSerial(record):
            writer.uint8(Tag.putEventSerial.rawValue)
            writer.string(record.eventKey)
            writer.uint32(record.serial)
            writer.data(record.encoded)
        case let .putStartProgress(progress):
            writer.uint8(Tag.putStartProgress.rawValue)
            writer.string(progress.eventKey)
            writer.string(progress.topic)
            writer.data(progress.encoded)
        case let .removeEvent(eventKey):
            writer.uint8(Tag.removeEvent.rawValue)
            writer.string(eventKey)
        case .registerBatch, .sweepExpired, .putUpdateAnswers, .removeUpdateAnswers:
            preconditionFailure("\(operation) is not replicated; encode(_:) filters it out")
        }
    }

    private static func optional<T>(_ value: T?, into writer: inout RecordWriter, _ body: (T, inout RecordWriter) -> Void) {
        guard let value else { writer.uint8(0); return }
        writer.uint8(1)
        body(value, &writer)
    }

    private static func decodeOptional<T>(_ reader: inout RecordReader,
                                          _ body: (inout RecordReader) throws(StoreError) -> T) throws(StoreError) -> T? {
        switch try reader.uint8() {
        case 0: return nil
        case 1: return try body(&reader)
        case let flag: throw StoreError.invalid("replicated write: an optional field's flag is \(flag), not 0 or 1")
        }
    }

    /// A token kind byte. One this build does not know was written by a newer node (kinds are
    /// only ever added: 3, Android's FCM tokens, came with store schema 6): the message says
    /// which node has to move, as the version check does.
    private static func kind(_ reader: inout RecordReader) throws(StoreError) -> TokenKind {
        let byte = try reader.uint8()
        guard let kind = TokenKind(rawValue: byte) else { throw unknownKind(byte) }
        return kind
    }

    static func unknownKind(_ byte: UInt8) -> StoreError {
        let known = TokenKind.allCases.map { "\($0.rawValue) \($0.name)" }.joined(separator: ", ")
        return StoreError.invalid("replicated write: token kind \(byte) is unknown to this Sokuho (it knows \(known), 3 being Android's FCM tokens); "
            + "a node running a newer Sokuho wrote it: upgrade this node to the version the other nodes run")
    }

    /// A record embedded in its stored layout, decoded by that record's own decoder. The record
    /// must encode back to exactly these bytes: some stored layouts tolerate trailing bytes (an
    /// older record read by a newer Sokuho), which a replicated entry has no reason to carry.
    private static func embedded<T>(_ reader: inout RecordReader, encoded: (T) -> [UInt8],
                                    _ body: (UnsafeRawBufferPointer) throws(StoreError) -> T) throws(StoreError) -> T {
        let bytes = try reader.data()
        let result: Result<T, StoreError> = bytes.withUnsafeBytes { buffer in
            do throws(StoreError) { return .success(try body(buffer)) } catch { return .failure(error) }
        }
        let record = try result.get()
        guard encoded(record) == bytes else { throw StoreError.invalid("replicated write: an embedded record has bytes its layout does not use") }
        return record
    }

    private static func decodeOperation(_ reader: inout RecordReader) throws(StoreError) -> WriteOperation {
        let byte = try reader.uint8()
        guard let tag = Tag(rawValue: byte) else { throw StoreError.invalid("replicated write: unknown operation \(byte)") }
        switch tag {
        case .register:
            let id = try reader.string()
            let app = try reader.string()
            let environment = try reader.environment()
            let kind = try kind(&reader)
            let token = try reader.data()
            let topicCount = try reader.length()
            var topics: [TopicSubscription] = []
            for _ in 0..<topicCount {
                let name = try reader.string()
                topics.append(TopicSubscription(name: name, minLevel: try reader.uint8()))
            }
            let secretHash = try decodeOptional(&reader) { (reader) throws(StoreError) in try reader.data() }
            let registeredAt = try decodeOptional(&reader) { (reader) throws(StoreError) in try reader.uint64() }
            let broadcast: Bool?
            switch try reader.uint8() {
            case 0: broadcast = nil
            case 1: broadcast = false
            case 2: broadcast = true
            case let other: throw StoreError.invalid("replicated write: broadcast flag \(other), not 0, 1 or 2")
            }
            let at = try reader.uint64()
            return .register(TokenRegistration(installationID: id, app: app, environment: environment, kind: kind, token: token, topics: topics,
                                               secretHash: secretHash, registeredAt: registeredAt, broadcast: broadcast), at: at)
        case .removeToken:
            let app = try reader.string()
            let environment = try reader.environment()
            let kind = try kind(&reader)
            let token = try reader.data()
            let before = try decodeOptional(&reader) { (reader) throws(StoreError) in try reader.uint64() }
            return .removeToken(app: app, environment: environment, kind: kind, token: token, registeredBefore: before)
        case .removeInstallation:
            return .removeInstallation(id: try reader.string())
        case .putActivity:
            let id = try reader.string()
            return .putActivity(try embedded(&reader, encoded: \.encoded) { (bytes) throws(StoreError) in try ActivityRecord(id: id, decoding: bytes) })
        case .removeActivity:
            return .removeActivity(id: try reader.string())
        case .putChannel:
            let app = try reader.string()
            let environment = try reader.environment()
            let name = try reader.string()
            return .putChannel(try embedded(&reader, encoded: \.encoded) { (bytes) throws(StoreError) in
                try ChannelRecord(app: app, environment: environment, name: name, decoding: bytes)
            })
        case .removeChannel:
            let app = try reader.string()
            let environment = try reader.environment()
            return .removeChannel(app: app, environment: environment, name: try reader.string())
        case .putEventSerial:
            let key = try reader.string()
            let serial = try reader.uint32()
            return .putEventSerial(try embedded(&reader, encoded: \.encoded) { (bytes) throws(StoreError) in
                try EventSerialRecord(eventKey: key, serial: serial, decoding: bytes)
            })
        case .putStartProgress:
            let key = try reader.string()
            let topic = try reader.string()
            return .putStartProgress(try embedded(&reader, encoded: \.encoded) { (bytes) throws(StoreError) in
                try StartProgress(eventKey: key, topic: topic, decoding: bytes)
            })
        case .removeEvent:
            return .removeEvent(eventKey: try reader.string())
        }
    }
}

extension WriteOperation {
    /// The token kind the operation registers or removes, if any.
    var tokenKind: TokenKind? {
        switch self {
        case let .register(registration, _): registration.kind
        case let .removeToken(_, _, kind, _, _): kind
        default: nil
        }
    }

    /// Whether the operation goes to the other nodes of a cluster (see `ReplicatedWrite`). Event
    /// records only when they are a cluster shard's: an event a node ran alone (Redis was down) is
    /// that node's — another node finding its serial `sending` after a restart would run it again.
    /// Of a shard's start progress only finished passes (what the start budget counts): its
    /// checkpoints, each with the answered window, go to Redis under the shard's lease
    /// (`ShardWorkers`), where the next holder reads them; sent here too they cost every node the
    /// bytes again (3 nodes, 200k starts: 6.8 MB of Redis traffic per shard with them).
    public var isReplicated: Bool {
        switch self {
        case .registerBatch, .sweepExpired, .putUpdateAnswers, .removeUpdateAnswers: false
        case let .putEventSerial(record): ShardRecordKey.eventKey(of: record.eventKey) != nil
        case let .putStartProgress(progress): ShardRecordKey.eventKey(of: progress.eventKey) != nil && progress.scanLevel == nil
        case let .removeEvent(eventKey): ShardRecordKey.eventKey(of: eventKey) != nil
        default: true
        }
    }
}

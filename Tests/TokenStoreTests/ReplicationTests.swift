import APNs
import Testing
@testable import TokenStore

/// Registration replication's store side: the codec of the operations nodes share, the outbox
/// written in the same transaction as each local change, the applied stream id written with the
/// changes read from the stream, and what a backup carries of them.
struct ReplicationTests {
    static let app = "com.example.eew"

    /// Every replicated operation, optional fields both absent and present.
    static let everyOperation: [WriteOperation] = {
        var full = registration("inst-1", token(1), topics: [TopicSubscription(name: "region:301", minLevel: 3), TopicSubscription(name: "b")],
                                broadcast: true)
        full.secretHash = Array(repeating: 0xab, count: 32)
        full.registeredAt = 1_700_000_000_123
        var device = registration("inst-1", token(2, length: 64), kind: .device, topics: [], broadcast: false)
        device.environment = .production
        return [
            .register(full, at: 1_700_000_000_124),
            .register(device, at: 5),
            .register(registration("inst-2", token(3)), at: 0),
            .removeToken(app: app, environment: .sandbox, kind: .pushToStart, token: token(1), registeredBefore: 1_700_000_000_999),
            .removeToken(app: app, environment: .production, kind: .device, token: token(4), registeredBefore: nil),
            .removeInstallation(id: "inst-2"),
            .putActivity(ActivityRecord(id: "act-1", app: app, environment: .sandbox, updateToken: token(5), eventKey: "eew-1",
                                        startedAt: 10, expiresAt: 20, topic: "region:301")),
            .putActivity(ActivityRecord(id: "act-2", app: app, environment: .production, updateToken: token(6), eventKey: "eew-1", startedAt: 10)),
            .removeActivity(id: "act-1"),
            .putChannel(ChannelRecord(app: app, environment: .sandbox, name: "region:301", channelID: "dHN0LTEyMzQ=", storagePolicy: .mostRecentMessageStored)),
            .removeChannel(app: app, environment: .production, name: "region:302"),
            // Event records travel only as a cluster shard's (`WriteOperation.isReplicated`).
            .putEventSerial(EventSerialRecord(eventKey: ShardRecordKey.make(eventKey: "eew-1", shard: 1, count: 8), serial: 7, bodyHash: Array(repeating: 1, count: 32), phase: .done,
                                              startedAt: 1, updatedAt: 2, report: Array(#"{"delivered":3}"#.utf8), body: Array("{}".utf8))),
            .putStartProgress(StartProgress(eventKey: ShardRecordKey.make(eventKey: "eew-1", shard: 2, count: 8), topic: "region:301", app: app, environment: .sandbox, doneLevel: 2, scanLevel: nil,
                                            completed: [1, 2, 3], submitted: [4, 5], answered: [99, 100], updatedAt: 3)),
            .putStartProgress(StartProgress(eventKey: ShardRecordKey.make(eventKey: "eew-2", shard: 8, count: 8), topic: "b", app: app, environment: .production, updatedAt: 4)),
            .removeEvent(eventKey: ShardRecordKey.make(eventKey: "eew-1", shard: 1, count: 8)),
        ]
    }()

    @Test func everyReplicatedOperationSurvivesTheCodecUnchanged() throws {
        let encoded = ReplicatedWrite.encode(Self.everyOperation)
        let decoded = try ReplicatedWrite.decode(encoded)
        #expect(decoded.count == Self.everyOperation.count)
        // WriteOperation is not Equatable (a prepared import batch is not comparable); its
        // reflection prints every associated value, nested records included.
        for (original, copy) in zip(Self.everyOperation, decoded) {
            #expect(String(reflecting: copy) == String(reflecting: original))
        }
        #expect(ReplicatedWrite.encode(decoded) == encoded)
    }

    /// A node from before reads what it can and refuses by version what it cannot: a start
    /// checkpoint (format 2) goes in version 3, an FCM token without one in 2, the rest in 1.
    @Test func eachEntryIsWrittenInTheOldestVersionThatCarriesIt() {
        let checkpoints = Self.everyOperation.filter { if case .putStartProgress = $0 { true } else { false } }
        #expect(!checkpoints.isEmpty && ReplicatedWrite.encode(checkpoints).first == ReplicatedWrite.version && ReplicatedWrite.version == 3)
        #expect(ReplicatedWrite.encode([WriteOperation.removeInstallation(id: "x")]).first == 1)
    }

    @Test func importsAndSweepsStayOnTheNodeThatRanThem() throws {
        let batch = try RegistrationBatch([registration("imported", token(8))], at: 1)
        let operations: [WriteOperation] = [.registerBatch(batch), .sweepExpired(now: 1, installationMaxAge: 2), .removeInstallation(id: "x")]
        #expect(operations.map(\.isReplicated) == [false, false, true])
        let decoded = try ReplicatedWrite.decode(ReplicatedWrite.encode(operations))
        #expect(decoded.map { String(reflecting: $0) } == [String(reflecting: WriteOperation.removeInstallation(id: "x"))])
    }

    @Test func aShardsEventRecordsTravelAndAnEventRunAloneStaysOnItsNode() {
        let shardKey = ShardRecordKey.make(eventKey: "eew-1", shard: 3, count: 8)
        #expect(ShardRecordKey.eventKey(of: shardKey) == "eew-1")
        #expect(ShardRecordKey.eventKey(of: "eew-1") == nil)
        func serial(_ key: String) -> WriteOperation {
            .putEventSerial(EventSerialRecord(eventKey: key, serial: 1, bodyHash: Array(repeating: 1, count: 32), phase: .sending,
                                              startedAt: 1, updatedAt: 1))
        }
        func progress(_ key: String) -> WriteOperation {
            .putStartProgress(StartProgress(eventKey: key, topic: "region:0", app: "com.example.eew", environment: .production, updatedAt: 1))
        }
        let shard: [WriteOperation] = [serial(shardKey), progress(shardKey), .removeEvent(eventKey: shardKey)]
        let alone: [WriteOperation] = [serial("eew-1"), progress("eew-1"), .removeEvent(eventKey: "eew-1")]
        #expect(shard.map(\.isReplicated) == [true, true, true])
        #expect(alone.map(\.isReplicated) == [false, false, false])
        // A pass under way (a checkpoint) goes to Redis with the shard's lease, not to every node.
        let checkpoint = WriteOperation.putStartProgress(StartProgress(eventKey: shardKey, topic: "region:0", app: "com.example.eew",
                                                                       environment: .production, scanLevel: 1, answered: [1, 2], updatedAt: 1))
        #expect(!checkpoint.isReplicated)
        #expect(ReplicatedWrite.encode(alone) == ReplicatedWrite.encode([]), "left out of the stream")
    }

    @Test func aTruncatedOrAlteredEncodingIsRefusedWhole() throws {
        let encoded = ReplicatedWrite.encode(Self.everyOperation)
        // Every cut: none decodes into fewer operations.
        for length in 0..<encoded.count {
            #expect(throws: StoreError.self, "cut at \(length)") { try ReplicatedWrite.decode(Array(encoded[..<length])) }
        }
        var trailing = encoded
        trailing.append(0)
        #expect(throws: StoreError.self) { try ReplicatedWrite.decode(trailing) }
        var otherVersion = encoded
        otherVersion[0] = ReplicatedWrite.version + 1
        let versionError = #expect(throws: StoreError.self) { try ReplicatedWrite.decode(otherVersion) }
        #expect(versionError?.description.contains("version") == true)
        var unknownTag = ReplicatedWrite.encode([WriteOperation.removeInstallation(id: "x")])
        unknownTag[2] = 200
        #expect(throws: StoreError.self) { try ReplicatedWrite.decode(unknownTag) }
        // A count larger than what follows is a truncation, not an allocation.
        #expect(throws: StoreError.self) { try ReplicatedWrite.decode([ReplicatedWrite.version, 0xff, 0xff, 0xff, 0x7f]) }
        // Well-formed but invalid: an operation that `validate` refuses (an empty installation id).
        let invalid = ReplicatedWrite.encode([WriteOperation.removeInstallation(id: "")])
        let invalidError = #expect(throws: StoreError.self) { try ReplicatedWrite.decode(invalid) }
        #expect(invalidError?.description.contains("operation 1 of 1") == true, "\(String(describing: invalidError))")
        // An embedded record with bytes its layout does not use (a stored activity tolerates them).
        let record = ActivityRecord(id: "a", app: Self.app, environment: .sandbox, updateToken: token(1), eventKey: "k", startedAt: 1)
        var writer = RecordWriter()
        writer.uint8(ReplicatedWrite.version); writer.length(1)
        writer.uint8(ReplicatedWrite.Tag.putActivity.rawValue); writer.string("a")
        writer.data(record.encoded + [0x01, 0x41, 0x00]) // a topic "A" and one byte more
        #expect(throws: StoreError.self) { try ReplicatedWrite.decode(writer.bytes) }
    }

    @Test func aLocalWriteReachesTheOutboxInItsOwnTransactionAndAStreamWriteNever() throws {
        let fixture = StoreFixture()
        let store = try fixture.open()
        defer { store.close() }
        // Before replication is switched on, nothing is recorded for publishing.
        try store.write([.register(registration("before", token(1)), at: 1)])
        #expect(try store.outbox(limit: 10).isEmpty)

        let identity = try store.replicate()
        #expect(identity.count == 32 && identity.allSatisfy(\.isHexDigit))
        #expect(try store.replicate() == identity, "idempotent")
        let local: [WriteOperation] = [.register(registration("local", token(2)), at: 2), .sweepExpired(now: 0, installationMaxAge: .max)]
        try store.write(local)
        let records = try store.outbox(limit: 10)
        #expect(records.count == 1)
        let published = try ReplicatedWrite.decode(try #require(records.first).operations)
        #expect(published.map { String(reflecting: $0) } == [String(reflecting: local[0])], "the sweep is not published")

        // From the stream: applied, the id stored with it, nothing added to the outbox (no echo).
        try store.applyFromStream([.register(registration("remote", token(3)), at: 3)], through: "1700000000000-4")
        #expect(try store.installation(id: "remote") != nil)
        #expect(try store.outbox(limit: 10).map(\.sequence) == records.map(\.sequence))
        var status = try store.replicationStatus()
        #expect(status == ReplicationStatus(applied: "1700000000000-4", behind: nil, outbox: 1))

        // Published records go; later ones keep counting up, never reusing a number.
        try store.removeFromOutbox(through: records[0].sequence)
        #expect(try store.outbox(limit: 10).isEmpty)
        try store.write([.removeInstallation(id: "local")])
        #expect(try store.outbox(limit: 10).map(\.sequence) == [records[0].sequence + 1])
        try store.applyFromStream([], through: "1700000000001-0", behind: "entries were trimmed")
        status = try store.replicationStatus()
        #expect(status.applied == "1700000000001-0" && status.behind == "entries were trimmed" && status.outbox == 1)
        #expect(try store.check().isConsistent, "replication's meta keys are no inconsistency")
    }

    @Test func aBigLocalBatchIsPublishedInBoundedRecordsInOrder() throws {
        let fixture = StoreFixture()
        let store = try fixture.open()
        defer { store.close() }
        _ = try store.replicate()
        let operations = (0..<1_200).map { WriteOperation.register(registration("big-\($0)", token($0)), at: UInt64($0)) }
        try store.write(operations)
        let records = try store.outbox(limit: 100)
        #expect(records.map(\.sequence) == [0, 1, 2])
        let decoded = try records.flatMap { try ReplicatedWrite.decode($0.operations) }
        #expect(decoded.map { String(reflecting: $0) } == operations.map { String(reflecting: $0) })
        #expect(records.allSatisfy { (try? ReplicatedWrite.decode($0.operations).count) ?? .max <= ReplicationKeys.operationsPerRecord })
    }

    @Test func aBackupCarriesTheAppliedIDButNeitherTheOutboxNorTheIdentity() throws {
        let fixture = StoreFixture()
        let store = try fixture.open()
        let identity = try store.replicate()
        try store.write([.register(registration("unpublished", token(1)), at: 1)])
        try store.applyFromStream([.register(registration("applied", token(2)), at: 2)], through: "42-7")
        let copy = StoreFixture()
        try store.backup(to: copy.directory + "/backup")
        store.close()

        let restored = try TokenStore(directory: copy.directory + "/backup")
        defer { restored.close() }
        #expect(try restored.installation(id: "unpublished") != nil && restored.installation(id: "applied") != nil)
        // It resumes where the original was, as a new replica: it applies every entry after
        // 42-7 (its old self's too) and does not publish its old self's outbox a second time.
        #expect(try restored.replicationStatus() == ReplicationStatus(applied: "42-7", behind: nil, outbox: 0))
        #expect(try restored.replicate() != identity)
        #expect(try restored.check().isConsistent)
    }

    @Test func threadsSwitchingAFreshStoreOnAtOnceSettleOnTheIdentityTheStoreKeeps() async throws {
        let fixture = StoreFixture()
        var store = try fixture.open()
        let ids = try await withThrowingTaskGroup(of: String.self) { [store] group in
            for _ in 0..<8 { group.addTask { try store.replicate() } }
            return try await group.reduce(into: Set<String>()) { $0.insert($1) }
        }
        #expect(ids.count == 1)
        store.close()
        store = try fixture.open()
        defer { store.close() }
        #expect(try store.replicate() == ids.first, "reopened, the store has the identity its entries were published under")
    }
}

import APNs
import CLMDB
import Glibc
import Testing
@testable import TokenStore

/// `store backup` rewrites the store in key order: the copy must hold exactly what the live store
/// holds, answer every query the same, and fill its pages.
struct BackupTests {
    static let app = "com.example.eew"
    static let ids = ["e099ec6c-d736-3ca5-85e7-bb0f12278575", "6F9B6DAE-6F4C-57A8-2AC2-CE17A5794A3B",
                      "7ef1fd0e-D154-8fcd-1f84-10633ef306ac", "plain-id", "0123456789abcdef"]
        // Enough installations in one topic that its duplicates leave the leaf for a sub-database,
        // written in scattered order so the live store's pages are as partly full as in production.
        + (0..<600).map { index in index % 3 == 0 ? uuid(index) : "id-\((index * 7919) % 600)" }
    static let topicNames = ["region:301", "region:302", "b"]

    static func uuid(_ index: Int) -> String {
        let hex = String((index * 2_654_435_761) & 0xffff_ffff, radix: 16)
        return String(repeating: "0", count: 8 - hex.count) + hex + "-d736-3ca5-85e7-bb0f12278575"
    }

    /// Installations of every id form with both kinds of token, registration times, topics at
    /// several levels and broadcast flags; activities (several per event key), channels, event records.
    static func fill(_ store: TokenStore) throws { try store.write(operations()) }

    /// What `fill` writes, in order.
    static func operations() -> [WriteOperation] {
        var operations: [WriteOperation] = []
        for (index, id) in ids.enumerated() {
            let topics = (0..<(1 + index % 3)).map { TopicSubscription(name: topicNames[($0 + index) % 3], minLevel: UInt8((index + $0) % 7)) }
            var push = registration(id, token(index), topics: topics, broadcast: index % 2 == 0)
            push.registeredAt = 1_700_000_000_000 + UInt64(index)
            push.secretHash = [UInt8(truncatingIfNeeded: index), 9]
            operations.append(.register(push, at: 1_000))
            if index % 4 != 1 {
                operations.append(.register(registration(id, token(5000 + index, length: 32 + index % 2), kind: .device,
                                                         topics: [topics[0]]), at: 2_000 + UInt64(index)))
            }
        }
        for index in 0..<12 {
            operations.append(.putActivity(ActivityRecord(id: "act-\(index)", app: app, environment: .sandbox, updateToken: token(9000 + index),
                                                          eventKey: "eew-\(index % 3)", startedAt: UInt64(index),
                                                          expiresAt: index % 2 == 0 ? 99_000 : nil, topic: index % 3 == 0 ? "region:301" : nil)))
        }
        for (environment, name) in [(Environment.sandbox, "region:301"), (.sandbox, "b"), (.production, "region:301")] {
            operations.append(.putChannel(ChannelRecord(app: app, environment: environment, name: name, channelID: "ch-\(name)",
                                                        storagePolicy: name == "b" ? .noMessageStored : .mostRecentMessageStored)))
        }
        operations.append(.putEventSerial(EventSerialRecord(eventKey: "eew-1", serial: 2, bodyHash: [7, 8], phase: .sending, startedAt: 4, updatedAt: 5)))
        operations.append(.putStartProgress(StartProgress(eventKey: "eew-1", topic: "region:301", app: app, environment: .sandbox, doneLevel: 3,
                                                          scanLevel: 5, completed: [1, 2], submitted: [3], answered: [42, 43], updatedAt: 6)))
        return operations
    }

    /// Every key and value of every database, in order.
    static func entries(_ store: TokenStore) throws -> [[[UInt8]]] {
        try store.read { txn throws(StoreError) in
            var all: [[[UInt8]]] = []
            for dbi in store.databases.inSchemaOrder {
                all.append(try txn.withCursor(dbi) { cursor throws(StoreError) in
                    var entries: [[UInt8]] = []
                    var position = try cursor.get(MDB_FIRST)
                    while let (key, value) = position {
                        entries += [Array(key), Array(value)]
                        position = try cursor.get(MDB_NEXT)
                    }
                    return entries
                })
            }
            return all
        }
    }

    /// What `sokuho tokens export` writes.
    static func export(_ store: TokenStore) throws -> [UInt8] {
        var out: [UInt8] = []
        try store.forEachInstallationWithRegistrationTimes { installation, times in
            for kind in TokenKind.allCases { TokenLineWriter.append(installation, kind: kind, registeredAt: times[kind], to: &out) }
        }
        try store.forEachActivity { TokenLineWriter.append($0, to: &out) }
        return out
    }

    /// Leaf pages of each database except `meta`.
    static func leafPages(_ store: TokenStore) throws -> [Int] {
        try store.read { txn throws(StoreError) in
            var pages: [Int] = []
            for dbi in store.databases.inSchemaOrder.dropFirst() { pages.append(try txn.statistics(dbi).ms_leaf_pages) }
            return pages
        }
    }

    @Test(arguments: [StoreCopy.batchBytes, 2_000])
    func aBackupHoldsTheSameAndAnswersEveryQueryTheSame(batchBytes: Int) throws {
        let fixture = StoreFixture()
        let store = try fixture.open()
        try Self.fill(store)
        let destination = fixture.directory + "/backup"
        // Small batches end inside databases and inside one key's duplicates.
        try store.backup(to: destination, batchBytes: batchBytes)
        #expect(access(destination + "/lock.mdb", F_OK) != 0) // the copy is data.mdb alone, as before
        let copy = try TokenStore(directory: destination, options: TokenStore.Options(readOnly: true))

        #expect(try Self.entries(copy) == (try Self.entries(store)))
        #expect(try Self.export(copy) == (try Self.export(store)))
        #expect(try copy.schemaVersion == StoreSchema.currentVersion)
        #expect(try copy.check().isConsistent)
        for (index, id) in Self.ids.enumerated() {
            #expect(try copy.installation(id: id) == (try store.installation(id: id)))
            for (kind, tokenBytes) in [(TokenKind.pushToStart, token(index)), (.device, token(5000 + index, length: 32 + index % 2))] {
                let owner = try copy.tokenOwner(app: Self.app, environment: .sandbox, kind: kind, token: tokenBytes)
                let expected = try store.tokenOwner(app: Self.app, environment: .sandbox, kind: kind, token: tokenBytes)
                #expect(owner?.installationID == expected?.installationID && owner?.registeredAt == expected?.registeredAt)
            }
        }
        for topic in Self.topicNames {
            for level: UInt8 in [0, 2, 5, 255] {
                for kind in [nil, TokenKind.pushToStart, .device] {
                    #expect(try copy.scannedTargets(topic, level: level, kind: kind) == (try store.scannedTargets(topic, level: level, kind: kind)))
                }
            }
        }
        #expect(try copy.scannedTargets("region:301").count > 200)
        for index in 0..<12 { #expect(try copy.activity(id: "act-\(index)") == (try store.activity(id: "act-\(index)"))) }
        for eventKey in ["eew-0", "eew-1", "eew-2"] {
            #expect(try copy.activities(eventKey: eventKey) == (try store.activities(eventKey: eventKey)))
            #expect(try copy.eventRecords(eventKey: eventKey) == (try store.eventRecords(eventKey: eventKey)))
        }
        #expect(try copy.activities(eventKey: "eew-1").count == 4)
        for environment in [Environment.sandbox, .production] {
            #expect(try copy.channels(app: Self.app, environment: environment) == (try store.channels(app: Self.app, environment: environment)))
        }
        #expect(try copy.channel(app: Self.app, environment: .sandbox, name: "b") == (try store.channel(app: Self.app, environment: .sandbox, name: "b")))
        #expect(try copy.startProgress(updatedSince: 0) == (try store.startProgress(updatedSince: 0)))
        let (live, copied) = (try store.statistics(), try copy.statistics())
        #expect(copied.installations == live.installations && copied.tokens == live.tokens && copied.topics == live.topics)
        #expect(copied.activities == live.activities && copied.channels == live.channels && copied.events == live.events)
    }

    @Test func aBackupFillsItsPages() throws {
        let fixture = StoreFixture()
        let store = try fixture.open()
        // The writer sorts each batch, so batches whose keys interleave (every 25th installation
        // in each) leave the pages as partly full as a store filled over time.
        for batch in 0..<25 {
            try store.write((0..<80).map { .register(registration(Self.uuid($0 * 25 + batch), token($0 * 25 + batch)), at: 1) }, durable: false)
        }
        let destination = fixture.directory + "/backup"
        try store.backup(to: destination)
        let copy = try TokenStore(directory: destination, options: TokenStore.Options(readOnly: true))
        // installations and tokens: from about two-thirds full to full. (LMDB's counts for `topics`
        // leave out the pages of its duplicates' sub-databases.)
        let (live, packed) = (try Self.leafPages(store), try Self.leafPages(copy))
        for index in 0..<2 { #expect(Double(packed[index]) <= 0.8 * Double(live[index])) }
        #expect(zip(packed, live).allSatisfy { $0 <= $1 })
        // A copy of the copy is the same size: nothing left to pack.
        try copy.backup(to: fixture.directory + "/again")
        let again = try TokenStore(directory: fixture.directory + "/again", options: TokenStore.Options(readOnly: true))
        #expect(try Self.leafPages(again) == packed)
    }

    @Test func aBackupIsTakenWhileAWriterRuns() throws {
        let fixture = StoreFixture()
        let store = try fixture.open()
        try Self.fill(store)
        // Writes keep coming while the copy runs; the copy is one of the states between them.
        let writes = (0..<200).map { WriteOperation.register(registration("late-\($0)", token(20_000 + $0)), at: 3_000) }
        let tickets = try writes.map { operation throws(StoreError) in try store.enqueue([operation], durable: false) }
        try store.backup(to: fixture.directory + "/backup")
        for ticket in tickets { _ = try ticket.wait() }
        let copy = try TokenStore(directory: fixture.directory + "/backup", options: TokenStore.Options(readOnly: true))
        #expect(try copy.check().isConsistent)
        let late = try (0..<200).filter { index throws(StoreError) in try copy.installation(id: "late-\(index)") != nil }
        #expect(late == Array(late.indices)) // a prefix: whole batches, in order
    }

    @Test func aBackupRefusesADestinationItCannotUse() throws {
        let fixture = StoreFixture()
        let store = try fixture.open()
        try Self.fill(store)
        // A destination whose parent is a file cannot be created.
        let file = fixture.directory + "/file"
        let fd = creat(file, 0o640)
        #expect(fd >= 0 && close(fd) == 0)
        #expect(throws: StoreError.self) { try store.backup(to: file + "/backup") }
        // One that holds a store already is refused and kept.
        let destination = fixture.directory + "/backup"
        try store.backup(to: destination)
        let error = #expect(throws: StoreError.self) { try store.backup(to: destination) }
        #expect(error == .cannotCreate(path: destination + "/data.mdb", reason: "it already exists; choose an empty directory"))
        #expect(try TokenStore(directory: destination, options: TokenStore.Options(readOnly: true)).check().isConsistent)
    }
}

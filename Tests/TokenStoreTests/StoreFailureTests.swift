import APNs
import CLMDB
import Glibc
import Testing
@testable import TokenStore

/// What an operator sees when the store is not what it should be.
@Suite struct StoreFailureTests {
    @Test func aFileThatIsNotLMDBIsForeign() throws {
        let fixture = StoreFixture()
        let fd = open(fixture.directory + "/data.mdb", O_WRONLY | O_CREAT, 0o600)
        let text = Array(repeating: "these are not the pages you are looking for\n", count: 400).joined()
        _ = text.withCString { write(fd, $0, strlen($0)) }
        close(fd)
        #expect {
            _ = try fixture.open()
        } throws: { error in
            guard case let .foreign(path, _) = error as? StoreError else { return false }
            return path == fixture.directory && "\(error)".contains("is not a Sokuho token store")
        }
    }

    @Test func anLMDBDatabaseOfSomethingElseIsForeign() throws {
        let fixture = StoreFixture()
        do {
            let environment = try LMDBEnvironment(directory: fixture.directory, mapSize: 1 << 20, readOnly: false)
            let txn = try environment.begin(readOnly: false)
            let main = try txn.openDatabase(nil, flags: 0, create: false)!
            try txn.put(main, Array("someone-else".utf8), [1, 2, 3])
            try txn.commit()
        }
        #expect(throws: StoreError.foreign(path: fixture.directory, detail: "an LMDB database without Sokuho's schema")) {
            _ = try fixture.open()
        }
    }

    @Test func aStoreFromANewerSokuhoIsRefused() throws {
        let fixture = StoreFixture()
        do {
            let store = try fixture.open()
            store.close()
            let txn = try store.environment.begin(readOnly: false)
            var writer = RecordWriter()
            writer.uint32(StoreSchema.currentVersion + 1)
            try txn.put(store.databases.meta, StoreSchema.versionKey, writer.bytes)
            try txn.commit()
        }
        #expect(throws: StoreError.newerSchema(path: fixture.directory, found: StoreSchema.currentVersion + 1, supported: StoreSchema.currentVersion)) {
            _ = try fixture.open()
        }
        #expect(throws: StoreError.newerSchema(path: fixture.directory, found: StoreSchema.currentVersion + 1, supported: StoreSchema.currentVersion)) {
            _ = try fixture.open(TokenStore.Options(readOnly: true))
        }
    }

    @Test func aFreshStoreIsMigratedToTheCurrentSchema() throws {
        let fixture = StoreFixture()
        #expect(throws: StoreError.missing(path: fixture.directory)) {
            _ = try fixture.open(TokenStore.Options(readOnly: true))
        }
        let store = try fixture.open()
        #expect(try store.schemaVersion == StoreSchema.currentVersion)
        #expect(StoreSchema.migrations.map(\.from) == Array(0..<StoreSchema.currentVersion))
    }

    @Test func aSchema1StoreIsMigratedAndItsActivitiesIndexed() throws {
        let fixture = StoreFixture()
        let activity = ActivityRecord(id: "act-1", app: "com.example.eew", environment: .sandbox, updateToken: token(3),
                                      eventKey: "eew-7", startedAt: 0)
        do {
            // A store as schema 1 left it: no activity index yet.
            let environment = try LMDBEnvironment(directory: fixture.directory, mapSize: 1 << 20, readOnly: false)
            let txn = try environment.begin(readOnly: false)
            try StoreSchema.migrations[0].run(txn)
            let meta = try txn.openDatabase("meta", flags: 0, create: false)!
            try txn.put(meta, StoreSchema.formatKey, StoreSchema.formatMarker)
            try txn.put(meta, StoreSchema.versionKey, [0, 0, 0, 1])
            let activities = try txn.openDatabase("activities", flags: 0, create: false)!
            try txn.put(activities, Array("act-1".utf8), activity.encoded)
            try txn.commit()
        }
        #expect(throws: StoreError.invalid("the token store at \(fixture.directory) has schema version 1 and needs an upgrade to \(StoreSchema.currentVersion); run any writing command (e.g. sokuho tokens prune --expired) once")) {
            _ = try fixture.open(TokenStore.Options(readOnly: true))
        }
        let store = try fixture.open()
        #expect(try store.schemaVersion == StoreSchema.currentVersion)
        #expect(try store.activities(eventKey: "eew-7") == [activity])
        #expect(try store.check().isConsistent)
    }

    @Test func aSchema2StoreIsMigratedSoEachTokenKeepsFollowingTheSharedTopics() throws {
        let fixture = StoreFixture()
        let topics = [TopicSubscription(name: "region:301", minLevel: 3), TopicSubscription(name: "b")]
        do {
            // A schema 2 store: one installation with both tokens and one shared (layout 1) topic
            // list, one with a push-to-start token only, and their index entries.
            let store = try fixture.open()
            try store.write([
                .register(registration("both", token(1), topics: topics), at: 1_000),
                .register(registration("both", token(2), kind: .device, topics: topics), at: 1_000),
                .register(registration("one", token(3), topics: topics), at: 1_000),
            ])
            store.close()
        }
        try downgradeToSchema4(fixture.directory)
        do {
            let environment = try LMDBEnvironment(directory: fixture.directory, mapSize: 1 << 24, readOnly: false)
            let txn = try environment.begin(readOnly: false)
            let installations = try txn.openDatabase("installations", flags: 0, create: false)!
            for (id, device) in [("both", token(2)), ("one", [])] as [(String, [UInt8])] {
                var layout1 = RecordWriter()
                layout1.uint8(1)
                layout1.string("com.example.eew")
                layout1.uint8(Environment.sandbox.storeByte)
                layout1.data([])
                layout1.data(token(id == "both" ? 1 : 3))
                layout1.data(device)
                layout1.uint64(1_000)
                layout1.uint64(1_000)
                layout1.length(topics.count)
                for topic in topics { layout1.string(topic.name); layout1.uint8(topic.minLevel) }
                try txn.put(installations, Array(id.utf8), layout1.bytes)
            }
            let meta = try txn.openDatabase("meta", flags: 0, create: false)!
            try txn.put(meta, StoreSchema.versionKey, [0, 0, 0, 2])
            try txn.commit()
        }
        let store = try fixture.open()
        #expect(try store.schemaVersion == StoreSchema.currentVersion)
        let both = try #require(try store.installation(id: "both"))
        #expect(both.topics(.pushToStart) == topics && both.topics(.device) == topics)
        #expect(try store.installation(id: "one")?.topics(.device) == [])
        #expect(try store.check().isConsistent)
        // Every record was rewritten in the new layout.
        let raw = try store.read { txn throws(StoreError) in try txn.get(store.databases.installations, Array("both".utf8)).map(Array.init) }
        #expect(raw?.first == Installation.layoutVersion)
    }

    @Test func aSchema4StoreIsMigratedKeepingEverythingWithUUIDIdsIn17Bytes() throws {
        let fixture = StoreFixture()
        let lower = "e099ec6c-d736-3ca5-85e7-bb0f12278575"
        let upper = "6F9B6DAE-6F4C-57A8-2AC2-CE17A5794A3B"
        let mixed = "7ef1fd0e-D154-8fcd-1f84-10633ef306ac"
        let ids = [lower, upper, mixed, "plain-id", "0123456789abcdef"]
        let topics = [TopicSubscription(name: "region:301", minLevel: 3), TopicSubscription(name: "b", minLevel: 0)]
        let activity = ActivityRecord(id: "act-1", app: "com.example.eew", environment: .sandbox, updateToken: token(90),
                                      eventKey: "eew-7", startedAt: 0)
        let serial = EventSerialRecord(eventKey: "eew-7", serial: 2, bodyHash: [7], phase: .sending, startedAt: 4, updatedAt: 5)
        var before: [Installation] = []
        var times: [RegistrationTimes] = []
        var targets: [ScannedTarget] = []
        do {
            let store = try fixture.open()
            var operations: [WriteOperation] = []
            for (index, id) in ids.enumerated() {
                var push = registration(id, token(index), topics: topics, broadcast: index % 2 == 0)
                push.registeredAt = 1_700_000_000_000 + UInt64(index)
                push.secretHash = [UInt8(index), 9]
                operations.append(.register(push, at: 1_000))
                operations.append(.register(registration(id, token(50 + index), kind: .device, topics: [topics[0]]), at: 2_000 + UInt64(index)))
            }
            try store.write(operations + [.putActivity(activity), .putEventSerial(serial)])
            try store.forEachInstallationWithRegistrationTimes { installation, registered in
                before.append(installation)
                times.append(registered)
            }
            targets = try store.scannedTargets("region:301")
            store.close()
        }
        try downgradeToSchema4(fixture.directory)
        let store = try fixture.open()
        #expect(try store.schemaVersion == StoreSchema.currentVersion)
        var after: [Installation] = []
        var afterTimes: [RegistrationTimes] = []
        try store.forEachInstallationWithRegistrationTimes { installation, registered in
            after.append(installation)
            afterTimes.append(registered)
        }
        #expect(after == before && afterTimes == times && after.count == ids.count)
        #expect(times.contains { $0.pushToStart == 1_700_000_000_002 && $0.device == 2_002 })
        #expect(try store.scannedTargets("region:301") == targets && targets.count == 2 * ids.count)
        #expect(targets.contains { $0.broadcast } && targets.contains { !$0.broadcast })
        #expect(try store.tokenOwner(app: "com.example.eew", environment: .sandbox, kind: .pushToStart, token: token(1))?.installationID == upper)
        #expect(try store.activity(id: "act-1") == activity)
        #expect(try store.eventRecords(eventKey: "eew-7").serials == [serial])
        #expect(try store.check().isConsistent)
        // Canonical UUIDs in one case are 17 bytes; a mixed-case one keeps its text.
        #expect(ids.map { StoreKeys.installation($0).count } == [17, 17, 36, 8, 16])
        for id in ids { #expect(StoreKeys.installation(id).withUnsafeBytes { StoreKeys.installationID($0) } == id) }
    }

    @Test func aSchema3StoreIsMigratedKeepingItsInstallationsAndClearingEventProgress() throws {
        let fixture = StoreFixture()
        let topics = [TopicSubscription(name: "region:301", minLevel: 3)]
        do {
            let store = try fixture.open()
            try store.write([
                .register(registration("both", token(1), topics: topics), at: 1_000),
                .register(registration("both", token(2), kind: .device, topics: topics), at: 1_000),
            ])
            store.close()
        }
        try downgradeToSchema4(fixture.directory)
        do {
            // Back to schema 3: installation records in layout 2 (no broadcast byte), topic
            // entries without the flag, and an events record in the old layout.
            let environment = try LMDBEnvironment(directory: fixture.directory, mapSize: 1 << 24, readOnly: false)
            let txn = try environment.begin(readOnly: false)
            let installations = try txn.openDatabase("installations", flags: 0, create: false)!
            let current = try #require(try txn.get(installations, Array("both".utf8)).map(Array.init))
            #expect(current.first == 3 && current.last == 0)
            try txn.put(installations, Array("both".utf8), [2] + current.dropFirst().dropLast())
            // An event progress record as schema 3 wrote it: phase, watermark, four times.
            var progress = RecordWriter()
            progress.uint8(1)
            progress.data([])
            for time: UInt64 in [0, 0, 5_000, 1_000] { progress.uint64(time) }
            let events = try txn.openDatabase("events", flags: 0, create: false)!
            try txn.put(events, Array("eew-7".utf8), progress.bytes)
            let meta = try txn.openDatabase("meta", flags: 0, create: false)!
            try txn.put(meta, StoreSchema.versionKey, [0, 0, 0, 3])
            try txn.commit()
        }
        let store = try fixture.open()
        #expect(try store.schemaVersion == StoreSchema.currentVersion)
        let both = try #require(try store.installation(id: "both"))
        #expect(both.pushToStartToken == token(1) && both.deviceToken == token(2) && both.topics(.device) == topics)
        #expect(!both.broadcast)
        #expect(try store.read { txn throws(StoreError) in try txn.count(store.databases.events) } == 0)
        #expect(try store.scannedTargets("region:301").map(\.broadcast) == [false, false])
        #expect(try store.check().isConsistent)
    }

    @Test func aWriterWaitsForAnotherProcessThenFailsClearly() throws {
        let fixture = StoreFixture()
        _ = try fixture.open()
        // Another process holding the writer lock (flock is per open file description, so a
        // second descriptor in this process stands in for it).
        let fd = open(fixture.directory + "/writer.lock", O_RDWR)
        #expect(flock(fd, LOCK_EX) == 0)
        #expect {
            _ = try fixture.open(TokenStore.Options(lockTimeout: 0.2))
        } throws: { error in
            guard case let .locked(path, waited) = error as? StoreError else { return false }
            return path == fixture.directory && waited >= 0.2 && "\(error)".contains("retry when it finishes")
        }
        // Readers never wait for the writer lock.
        let reader = try fixture.open(TokenStore.Options(readOnly: true))
        #expect(try reader.statistics().installations == 0)
        flock(fd, LOCK_UN)
        close(fd)
    }

    @Test func errnoValuesBecomeTheErrorsAUserCanActOn() {
        #expect(StoreError.from(EACCES, path: "/s") == .permissionDenied(path: "/s"))
        #expect(StoreError.from(EROFS, path: "/s") == .permissionDenied(path: "/s"))
        #expect(StoreError.from(ENOSPC, path: "/s") == .diskFull(path: "/s"))
        #expect("\(StoreError.from(ENOSPC, path: "/s"))".contains("disk holding the token store at /s is full"))
        guard case .corrupt = StoreError.from(MDB_CORRUPTED, path: "/s") else {
            Issue.record("MDB_CORRUPTED is corruption")
            return
        }
    }
}

import APNs
import Testing
@testable import TokenStore

/// Registrations, rotation, 410 pruning and sweeping, as the fan-out and the API see them.
@Suite struct RegistryTests {
    @Test func registrationIsReadBackWithOwnerAndRegistrationTime() throws {
        let fixture = StoreFixture()
        let store = try fixture.open()
        try store.write([.register(registration("install-1", token(1), topics: [TopicSubscription(name: "region:301", minLevel: 3)]), at: 1_000)])
        let installation = try #require(try store.installation(id: "install-1"))
        #expect(installation.pushToStartToken == token(1))
        #expect(installation.deviceToken == nil)
        #expect(installation.topics(.pushToStart) == [TopicSubscription(name: "region:301", minLevel: 3)])
        #expect(installation.topics(.device).isEmpty)
        #expect(installation.createdAt == 1_000)
        let owner = try #require(try store.tokenOwner(app: "com.example.eew", environment: .sandbox, kind: .pushToStart, token: token(1)))
        #expect(owner.installationID == "install-1")
        #expect(owner.registeredAt == 1_000)
        #expect(try store.tokenOwner(app: "com.example.eew", environment: .production, kind: .pushToStart, token: token(1)) == nil)
        #expect(try store.check().isConsistent)
    }

    @Test func aRotatedTokenReplacesTheOldOneEverywhere() throws {
        let fixture = StoreFixture()
        let store = try fixture.open()
        let topics = [TopicSubscription(name: "region:301"), TopicSubscription(name: "region:302", minLevel: 4)]
        try store.write([.register(registration("install-1", token(1), topics: topics), at: 1_000)])
        try store.write([.register(registration("install-1", token(2), topics: topics), at: 2_000)])
        #expect(try store.installation(id: "install-1")?.pushToStartToken == token(2))
        #expect(try store.tokenOwner(app: "com.example.eew", environment: .sandbox, kind: .pushToStart, token: token(1)) == nil)
        #expect(try store.tokenOwner(app: "com.example.eew", environment: .sandbox, kind: .pushToStart, token: token(2))?.registeredAt == 2_000)
        #expect(try store.targets("region:301") == [token(2)])
        #expect(try store.targets("region:302") == [token(2)])
        // Topics are replaced too: dropping region:302 removes the token from it.
        try store.write([.register(registration("install-1", token(2), topics: [TopicSubscription(name: "region:301")]), at: 3_000)])
        #expect(try store.targets("region:302").isEmpty)
        #expect(try store.check().isConsistent)
    }

    @Test func bothKindsOfTokenAreListedUnderTheTopicsTheyFollow() throws {
        let fixture = StoreFixture()
        let store = try fixture.open()
        try store.write([
            .register(registration("install-1", token(1), kind: .pushToStart), at: 1_000),
            .register(registration("install-1", token(2), kind: .device), at: 1_000),
        ])
        #expect(Set(try store.targets("region:301")) == [token(1), token(2)])
        #expect(try store.targets("region:301", kind: .device) == [token(2)])
        #expect(try store.check().isConsistent)
    }

    @Test func aDeviceLineWithNoTopicsLeavesThePushToStartTokensTopics() throws {
        let fixture = StoreFixture()
        let store = try fixture.open()
        let topics = [TopicSubscription(name: "region:301", minLevel: 3), TopicSubscription(name: "region:302")]
        try store.write([
            .register(registration("install-1", token(1), kind: .pushToStart, topics: topics), at: 1_000),
            .register(registration("install-1", token(2), kind: .device, topics: topics), at: 1_000),
        ])
        try store.write([.register(registration("install-1", token(2), kind: .device, topics: []), at: 2_000)])
        let installation = try #require(try store.installation(id: "install-1"))
        #expect(installation.topics(.pushToStart) == topics)
        #expect(installation.topics(.device).isEmpty)
        #expect(try store.targets("region:301") == [token(1)])
        #expect(try store.targets("region:302", kind: .pushToStart) == [token(1)])
        #expect(try store.targets("region:302", kind: .device).isEmpty)
        // A device line with other topics changes the device token's alone.
        try store.write([.register(registration("install-1", token(2), kind: .device, topics: [TopicSubscription(name: "c")]), at: 3_000)])
        #expect(try store.installation(id: "install-1")?.topics(.pushToStart) == topics)
        #expect(try store.targets("c") == [token(2)])
        // A token pruned by a 410 takes its topics with it; the other kind's stay.
        try store.write([.removeToken(app: "com.example.eew", environment: .sandbox, kind: .device, token: token(2), registeredBefore: nil)])
        #expect(try store.installation(id: "install-1")?.topics(.device) == [])
        #expect(try store.installation(id: "install-1")?.topics(.pushToStart) == topics)
        #expect(try store.check().isConsistent)
    }

    @Test func aTokenSeenOnANewInstallationLeavesTheOldOne() throws {
        let fixture = StoreFixture()
        let store = try fixture.open()
        try store.write([.register(registration("old-install", token(7)), at: 1_000)])
        try store.write([.register(registration("new-install", token(7)), at: 2_000)])
        #expect(try store.installation(id: "old-install")?.pushToStartToken == nil)
        #expect(try store.tokenOwner(app: "com.example.eew", environment: .sandbox, kind: .pushToStart, token: token(7))?.installationID == "new-install")
        #expect(try store.targets("region:301") == [token(7)])
        #expect(try store.check().isConsistent)
    }

    @Test func aTokenCarriedToAnotherAppTakesItOverFromItsHolderThere() throws {
        let fixture = StoreFixture()
        let store = try fixture.open()
        // A stale installation of app B holds device token 5; installation "moving" holds the same
        // device token under app A, then registers its push-to-start token for app B.
        try store.write([
            .register(registration("stale", token(5), kind: .device, app: "com.example.b"), at: 1_000),
            .register(registration("moving", token(5), kind: .device), at: 1_000),
        ])
        try store.write([.register(registration("moving", token(6), kind: .pushToStart, app: "com.example.b"), at: 2_000)])
        // The device token moved along and now belongs to "moving" alone.
        #expect(try store.tokenOwner(app: "com.example.b", environment: .sandbox, kind: .device, token: token(5))?.installationID == "moving")
        #expect(try store.installation(id: "stale")?.deviceToken == nil)
        #expect(try store.check().isConsistent)
    }

    @Test func a410PrunesOnlyATokenRegisteredBeforeItsTimestamp() throws {
        let fixture = StoreFixture()
        let store = try fixture.open()
        try store.write([.register(registration("install-1", token(1)), at: 5_000)])
        let remove = { (before: UInt64?) throws -> [WriteOutcome] in
            try store.write([.removeToken(app: "com.example.eew", environment: .sandbox, kind: .pushToStart, token: token(1), registeredBefore: before)])
        }
        // APNs says the token died at 4 999 ms, but the app registered it again at 5 000: keep it.
        #expect(try remove(4_999) == [.tokenRemoved(false)])
        #expect(try remove(5_000) == [.tokenRemoved(false)])
        #expect(try store.targets("region:301") == [token(1)])
        #expect(try remove(5_001) == [.tokenRemoved(true)])
        #expect(try store.targets("region:301").isEmpty)
        #expect(try store.installation(id: "install-1")?.pushToStartToken == nil)
        #expect(try remove(nil) == [.tokenRemoved(false)])
        #expect(try store.check().isConsistent)
        // The installation has no token left: the sweep removes it.
        let swept = try store.write([.sweepExpired(now: 6_000, installationMaxAge: 1_000_000)])
        #expect(swept == [.swept(SweepCounts(installations: 1))])
        #expect(try store.installation(id: "install-1") == nil)
    }

    @Test func aRegistrationWithoutATimeKeepsTheStoredTimeOfItsToken() throws {
        let fixture = StoreFixture()
        let store = try fixture.open()
        let owner = { (seed: Int) throws -> UInt64? in
            try store.tokenOwner(app: "com.example.eew", environment: .sandbox, kind: .pushToStart, token: token(seed))?.registeredAt
        }
        try store.write([.register(registration("install-1", token(1)), at: 1_000)])
        #expect(try owner(1) == 1_000)
        // A re-sync that does not say when: one by one, and as a sorted batch (an import).
        try store.write([.register(registration("install-1", token(1), topics: [TopicSubscription(name: "b")]), at: 9_000)])
        #expect(try owner(1) == 1_000)
        let resync = (0..<RegistryUpdate.minimumSortedRun).map { WriteOperation.register(registration("r\($0)", token(100 + $0)), at: 2_000) }
        try store.write(resync)
        try store.write(resync.map { operation in
            guard case let .register(registration, _) = operation else { return operation }
            return .register(registration, at: 8_000)
        } + [.register(registration("install-1", token(1)), at: 8_000)])
        #expect(try owner(1) == 1_000)
        #expect(try (0..<RegistryUpdate.minimumSortedRun).allSatisfy { try owner(100 + $0) == 2_000 })
        // A stated time is kept exactly, earlier or later than the stored one.
        var timed = registration("install-1", token(1))
        timed.registeredAt = 500
        try store.write([.register(timed, at: 9_500)])
        #expect(try owner(1) == 500)
        timed.registeredAt = 7_000
        try store.write([.register(timed, at: 9_600)])
        #expect(try owner(1) == 7_000)
        // A token new to the store, without a time, is registered at the operation's time.
        try store.write([.register(registration("install-1", token(2)), at: 9_700)])
        #expect(try owner(2) == 9_700)
        #expect(try store.check().isConsistent)
    }

    @Test func aReimportedExportKeepsRegistrationTimesSo410PruningStillWorks() throws {
        let source = StoreFixture(), target = StoreFixture()
        let original = try source.open(), copy = try target.open()
        try original.write([
            .register(registration("early", token(1)), at: 1_000),
            .register(registration("late", token(2)), at: 6_000),
            .register(registration("late", token(3), kind: .device), at: 7_000),
        ])
        var exported: [UInt8] = []
        try original.forEachInstallationWithRegistrationTimes { installation, times throws(StoreError) in
            for kind in TokenKind.allCases { TokenLineWriter.append(installation, kind: kind, registeredAt: times[kind], to: &exported) }
        }
        let lines = String(decoding: exported, as: UTF8.self).split(separator: "\n").map(String.init)
        #expect(lines.count == 3)
        // Imported long after, and re-synced again later: the phone's times survive both.
        for at: UInt64 in [50_000, 60_000] {
            try copy.write(try lines.map { .register(try TokenLineParser.parse($0, now: at), at: at) })
        }
        #expect(try copy.tokenOwner(app: "com.example.eew", environment: .sandbox, kind: .pushToStart, token: token(1))?.registeredAt == 1_000)
        #expect(try copy.tokenOwner(app: "com.example.eew", environment: .sandbox, kind: .device, token: token(3))?.registeredAt == 7_000)
        // A 410 saying the tokens died at 5 000 ms removes the one registered before and keeps the other.
        let remove = { (seed: Int) throws -> [WriteOutcome] in
            try copy.write([.removeToken(app: "com.example.eew", environment: .sandbox, kind: .pushToStart, token: token(seed), registeredBefore: 5_000)])
        }
        #expect(try remove(1) == [.tokenRemoved(true)])
        #expect(try remove(2) == [.tokenRemoved(false)])
        #expect(try copy.targets("region:301", kind: .pushToStart) == [token(2)])
        #expect(try copy.check().isConsistent)
    }

    @Test func aTokenMovedToAnotherEnvironmentAlongsideItsSiblingKeepsItsTime() throws {
        let fixture = StoreFixture()
        let store = try fixture.open()
        try store.write([
            .register(registration("install-1", token(1)), at: 1_000),
            .register(registration("install-1", token(2), kind: .device), at: 2_000),
        ])
        var moved = registration("install-1", token(1))
        moved.environment = .production
        try store.write([.register(moved, at: 9_000)])
        #expect(try store.tokenOwner(app: "com.example.eew", environment: .production, kind: .device, token: token(2))?.registeredAt == 2_000)
        #expect(try store.tokenOwner(app: "com.example.eew", environment: .sandbox, kind: .device, token: token(2)) == nil)
        #expect(try store.check().isConsistent)
    }

    @Test func sweepRemovesExpiredActivitiesStaleInstallationsAndOldEvents() throws {
        let fixture = StoreFixture()
        let store = try fixture.open()
        let hour: UInt64 = 3_600_000
        // An activity asked to live 12 hours lives 8.
        let activity = ActivityRecord(id: "act-1", app: "com.example.eew", environment: .sandbox, updateToken: token(9),
                                      eventKey: "eew-2026-1", startedAt: 0, expiresAt: 12 * hour)
        #expect(activity.expiresAt == 8 * hour)
        try store.write([
            .putActivity(activity),
            .register(registration("stale", token(1)), at: 0),
            .register(registration("fresh", token(2)), at: 9 * hour),
            .putEventSerial(EventSerialRecord(eventKey: "eew-2026-1", serial: 1, bodyHash: [1], phase: .done, startedAt: 0, updatedAt: 0)),
        ])
        #expect(try store.activity(id: "act-1") == activity)
        #expect(try store.activities(eventKey: "eew-2026-1") == [activity])
        // An activity that moves to another event leaves the old one's list.
        var moved = activity
        moved.eventKey = "eew-2026-2"
        try store.write([.putActivity(moved)])
        #expect(try store.activities(eventKey: "eew-2026-1").isEmpty)
        try store.write([.putActivity(activity)])
        let early = try store.write([.sweepExpired(now: 8 * hour - 1, installationMaxAge: 9 * hour)])
        #expect(early == [.swept(SweepCounts())])
        let late = try store.write([.sweepExpired(now: 200 * hour, installationMaxAge: 195 * hour)])
        #expect(late == [.swept(SweepCounts(installations: 1, activities: 1, events: 1))])
        #expect(try store.activity(id: "act-1") == nil)
        #expect(try store.activities(eventKey: "eew-2026-1").isEmpty)
        #expect(try store.installation(id: "stale") == nil)
        #expect(try store.installation(id: "fresh") != nil)
        #expect(try store.eventRecords(eventKey: "eew-2026-1").serials.isEmpty)
        #expect(try store.check().isConsistent)
    }

    @Test func channelsAndEventRecordsRoundTripAndStayApartPerEventKey() throws {
        let fixture = StoreFixture()
        let store = try fixture.open()
        let channel = ChannelRecord(app: "com.example.news", environment: .production, name: "election-2026",
                                    channelID: "dHN0LXNyY2gtY2hubA==", storagePolicy: .mostRecentMessageStored)
        let serial = EventSerialRecord(eventKey: "eew-1", serial: 2, bodyHash: Array(repeating: 7, count: 32), phase: .sending,
                                       startedAt: 4, updatedAt: 5, report: Array("{}".utf8))
        let progress = StartProgress(eventKey: "eew-1", topic: "region:301", app: "com.example.eew", environment: .production, doneLevel: 3, scanLevel: 5, completed: [32, 0, 1, 2],
                                     submitted: [32, 0, 1, 3], answered: [42, .max], updatedAt: 5)
        // "eew-1" must not pick up the records of "eew-10": keys end the event key with a NUL.
        let neighbour = StartProgress(eventKey: "eew-10", topic: "region:301", app: "com.example.eew", environment: .sandbox, doneLevel: nil, updatedAt: 1)
        try store.write([.putChannel(channel), .putEventSerial(serial), .putStartProgress(progress), .putStartProgress(neighbour)])
        #expect(try store.channel(app: "com.example.news", environment: .production, name: "election-2026") == channel)
        #expect(try store.channel(app: "com.example.news", environment: .sandbox, name: "election-2026") == nil)
        let other = ChannelRecord(app: "com.example.news", environment: .production, name: "a-night", channelID: "b3RoZXI=",
                                  storagePolicy: .noMessageStored)
        try store.write([.putChannel(other)])
        #expect(try store.channels(app: "com.example.news", environment: .production) == [other, channel])
        #expect(try store.channels(app: "com.example.new", environment: .production).isEmpty)
        let records = try store.eventRecords(eventKey: "eew-1")
        #expect(records.serials == [serial])
        #expect(records.starts == [progress])
        #expect(try store.startProgress(updatedSince: 2) == [progress])
        try store.write([.removeEvent(eventKey: "eew-1")])
        #expect(try store.eventRecords(eventKey: "eew-1").serials.isEmpty)
        #expect(try store.eventRecords(eventKey: "eew-10").starts == [neighbour])
        #expect(try store.check().isConsistent)
        try store.write([.removeChannel(app: "com.example.news", environment: .production, name: "election-2026")])
        #expect(try store.channel(app: "com.example.news", environment: .production, name: "election-2026") == nil)
    }

    @Test func anInvalidOperationFailsItsCallerBeforeAnythingIsQueued() throws {
        let fixture = StoreFixture()
        let store = try fixture.open()
        #expect(throws: StoreError.invalid("token is 3 bytes; a token has 8...100 bytes (16...200 hex digits)")) {
            try store.write([.register(registration("install-1", [1, 2, 3]), at: 0)])
        }
        #expect(throws: StoreError.invalid("topic 'a' is listed twice")) {
            try store.write([.register(registration("install-1", token(1), topics: [TopicSubscription(name: "a"), TopicSubscription(name: "a")]), at: 0)])
        }
        #expect(throws: StoreError.invalid("app is empty")) {
            _ = try RegistrationBatch([registration("install-1", token(1)), registration("install-2", token(2), app: "")], at: 0)
        }
        #expect(try store.statistics().installations == 0)
    }

    @Test func writesQueuedFromManyThreadsAllCommit() async throws {
        let fixture = StoreFixture()
        let store = try fixture.open()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for writer in 0..<8 {
                group.addTask {
                    for index in 0..<25 {
                        try await store.write([.register(registration("w\(writer)-\(index)", token(writer * 100 + index)), at: 1)])
                    }
                }
            }
            try await group.waitForAll()
        }
        #expect(try store.statistics().installations == 200)
        #expect(try store.targets("region:301").count == 200)
    }

    @Test func backupIsACompleteStoreAndRefusesToOverwrite() throws {
        let fixture = StoreFixture()
        let store = try fixture.open()
        try store.write((0..<50).map { .register(registration("i\($0)", token($0)), at: 1) })
        let destination = fixture.directory + "/backup"
        try store.backup(to: destination)
        #expect(throws: StoreError.self) { try store.backup(to: destination) }
        let copy = try TokenStore(directory: destination, options: TokenStore.Options(readOnly: true))
        #expect(try copy.statistics().installations == 50)
        #expect(try copy.targets("region:301") == (try store.targets("region:301")))
        #expect(try copy.check().isConsistent)
    }

    @Test func aSortedBatchEndsExactlyWhereOneByOneWritesEnd() throws {
        // Existing installations rotating, new ones, a token taken over from an installation
        // outside the batch, and topic changes: one batch (sorted per database) must give the
        // same store as the same registrations written one at a time.
        let initial: [WriteOperation] = (0..<100).map { .register(registration("i\($0)", token($0)), at: 1) }
        var batch: [WriteOperation] = []
        for index in 0..<200 where index % 3 != 0 {
            let topics = [TopicSubscription(name: "region:\(index % 5)", minLevel: UInt8(index % 3))]
            let tokenNumber = index == 50 ? 9 : 1000 + index // i50 takes over the token of i9 (not in the batch)
            batch.append(.register(registration("i\(index)", token(tokenNumber), topics: topics), at: 2))
        }
        let (sortedStore, fixture) = try expectSameAsOneByOne(initial: initial, batch: batch, ids: (0..<200).map { "i\($0)" })
        defer { withExtendedLifetime(fixture) {} }
        #expect(try sortedStore.installation(id: "i9")?.pushToStartToken == nil)
        #expect(try sortedStore.tokenOwner(app: "com.example.eew", environment: .sandbox, kind: .pushToStart, token: token(9))?.installationID == "i50")
    }

    @Test func aBatchThatRepeatsInstallationsAndTokensKeepsInputOrder() throws {
        // Both kinds of token per installation (two lines each), an installation registered three
        // times with changing topics and tokens, a token handed from one new installation to
        // another inside the batch: rounds keep each of these in input order.
        var batch: [WriteOperation] = []
        for index in 0..<80 {
            batch.append(.register(registration("n\(index)", token(5000 + index), kind: .pushToStart), at: 3))
            batch.append(.register(registration("n\(index)", token(6000 + index), kind: .device,
                                                topics: [TopicSubscription(name: "region:\(index % 4)")]), at: 3))
        }
        batch.append(.register(registration("n3", token(7001), topics: [TopicSubscription(name: "a")]), at: 4))
        batch.append(.register(registration("n3", token(7002), topics: [TopicSubscription(name: "b", minLevel: 2)]), at: 5))
        batch.append(.register(registration("x1", token(8000)), at: 6))
        batch.append(.register(registration("x2", token(8000)), at: 7))
        let (store, fixture) = try expectSameAsOneByOne(initial: [], batch: batch, ids: (0..<80).map { "n\($0)" } + ["x1", "x2"])
        defer { withExtendedLifetime(fixture) {} }
        #expect(try store.installation(id: "n3")?.pushToStartToken == token(7002))
        #expect(try store.installation(id: "n3")?.topics(.pushToStart) == [TopicSubscription(name: "b", minLevel: 2)])
        #expect(try store.installation(id: "x1")?.pushToStartToken == nil)
        #expect(try store.tokenOwner(app: "com.example.eew", environment: .sandbox, kind: .pushToStart, token: token(8000))?.installationID == "x2")
    }

    /// Writes `batch` in one go to one store and one operation at a time to another, compares
    /// them, and returns the first (with its directory, kept until the caller is done).
    func expectSameAsOneByOne(initial: [WriteOperation], batch: [WriteOperation], ids: [String]) throws -> (TokenStore, StoreFixture) {
        let sorted = StoreFixture(), oneByOne = StoreFixture()
        let sortedStore = try sorted.open(), oneByOneStore = try oneByOne.open()
        if !initial.isEmpty {
            try sortedStore.write(initial)
            try oneByOneStore.write(initial)
        }
        try sortedStore.write(batch)
        for operation in batch { try oneByOneStore.write([operation]) }
        let topics = try sortedStore.statistics().topics
        #expect(topics == (try oneByOneStore.statistics().topics))
        for id in ids {
            #expect(try sortedStore.installation(id: id) == (try oneByOneStore.installation(id: id)), "\(id)")
        }
        for topic in topics {
            #expect(try sortedStore.targets(topic.topic) == (try oneByOneStore.targets(topic.topic)))
        }
        #expect(try sortedStore.check().isConsistent)
        withExtendedLifetime((oneByOne, oneByOneStore)) {}
        return (sortedStore, sorted)
    }
}

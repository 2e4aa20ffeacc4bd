import APNs
import CLMDB
import Testing
@testable import TokenStore

/// An FCM registration token's text as bytes: the shape Google issues (an instance id, ':', a
/// long `[A-Za-z0-9_-]` tail), distinct per `seed`.
func fcmToken(_ seed: Int) -> [UInt8] {
    Array("c\(seed)Xq_-Zt:APA91bH\(String(repeating: "k9-Lm_", count: 24))\(seed)".utf8)
}

/// Android installations in the store: kind `fcm` (3) beside the APNs kinds, one platform per
/// installation, the record layout and schema that carry them, and what replication says of a
/// kind it does not know.
@Suite struct AndroidInstallationTests {
    @Test func aTopicScanOfKindFCMReturnsExactlyTheAndroidTokensAndTheAPNsScansAreUnchanged() throws {
        let fixture = StoreFixture()
        let store = try fixture.open()
        let topics = [TopicSubscription(name: "region:301", minLevel: 2)]
        try store.write([
            .register(registration("ios", token(1), topics: topics, broadcast: true), at: 1_000),
            .register(registration("ios", token(2), kind: .device, topics: topics), at: 1_000),
            .register(registration("android-1", fcmToken(1), kind: .fcm, topics: topics), at: 1_000),
            .register(registration("android-2", fcmToken(2), kind: .fcm, topics: topics), at: 1_000),
        ])
        #expect(Set(try store.targets("region:301", kind: .fcm)) == [fcmToken(1), fcmToken(2)])
        #expect(try store.targets("region:301", kind: .pushToStart) == [token(1)])
        #expect(try store.targets("region:301", kind: .device) == [token(2)])
        let android = try store.scannedTargets("region:301", kind: .fcm)
        #expect(android.allSatisfy { $0.kind == .fcm && $0.minLevel == 2 && !$0.broadcast })
        // Below the topic's level nothing qualifies, Android or not.
        #expect(try store.targets("region:301", level: 1, kind: .fcm).isEmpty)
        #expect(try store.installation(id: "android-1")?.platform == .android)
        #expect(try store.installation(id: "ios")?.platform == .ios)
        #expect(try store.tokenOwner(app: "com.example.eew", environment: .sandbox, kind: .fcm, token: fcmToken(2))?.installationID == "android-2")
        #expect(try store.check().isConsistent)
    }

    @Test func anInstallationHoldsOnePlatformsTokensAndAMixIsRefusedNamingIt() throws {
        let fixture = StoreFixture()
        let store = try fixture.open()
        try store.write([
            .register(registration("ios", token(1)), at: 1_000),
            .register(registration("android", fcmToken(1), kind: .fcm), at: 1_000),
        ])
        let toIOS = #expect(throws: StoreError.self) {
            try store.write([.register(registration("ios", fcmToken(2), kind: .fcm), at: 2_000)])
        }
        #expect(toIOS?.description == "installation 'ios' is an iOS installation (its tokens: pushToStart); fcm tokens belong to Android installations: register that phone under its own installationId")
        let toAndroid = #expect(throws: StoreError.self) {
            try store.write([.register(registration("android", token(2), kind: .device), at: 2_000)])
        }
        #expect(toAndroid?.description.contains("installation 'android' is an Android installation (its tokens: fcm); device tokens belong to iOS installations") == true)
        // Nothing of either refused write landed.
        #expect(try store.installation(id: "ios")?.fcmToken == nil)
        #expect(try store.installation(id: "android")?.deviceToken == nil)
        // A sorted import batch meets the same rule on its second line for one installation.
        let lines = (0..<RegistryUpdate.minimumSortedRun).map { registration("batch-\($0)", token(100 + $0)) }
            + [registration("batch-0", fcmToken(3), kind: .fcm)]
        #expect(throws: StoreError.self) { try store.write([.registerBatch(try RegistrationBatch(lines, at: 3_000))]) }
        #expect(try store.installation(id: "batch-0") == nil, "the whole batch was refused")
        #expect(try store.check().isConsistent)
    }

    @Test func anInstallationWhoseTokensWerePrunedMayBeRegisteredForEitherPlatform() throws {
        let fixture = StoreFixture()
        let store = try fixture.open()
        try store.write([.register(registration("phone", fcmToken(1), kind: .fcm), at: 1_000)])
        try store.write([.removeToken(app: "com.example.eew", environment: .sandbox, kind: .fcm, token: fcmToken(1), registeredBefore: nil)])
        #expect(try store.installation(id: "phone")?.platform == nil)
        try store.write([.register(registration("phone", token(1)), at: 2_000)])
        #expect(try store.installation(id: "phone")?.platform == .ios)
    }

    @Test func pruningAnFCMTokenRemovesItsTopicEntriesAndLeavesTheOthers() throws {
        let fixture = StoreFixture()
        let store = try fixture.open()
        let topics = [TopicSubscription(name: "region:301"), TopicSubscription(name: "region:302", minLevel: 4)]
        try store.write([
            .register(registration("android-1", fcmToken(1), kind: .fcm, topics: topics), at: 5_000),
            .register(registration("android-2", fcmToken(2), kind: .fcm, topics: topics), at: 5_000),
            .register(registration("ios", token(1), topics: topics), at: 5_000),
        ])
        let remove = { (token: [UInt8], before: UInt64?) throws -> [WriteOutcome] in
            try store.write([.removeToken(app: "com.example.eew", environment: .sandbox, kind: .fcm, token: token, registeredBefore: before)])
        }
        // Registered at 5 000: an error about a send that started earlier does not prune it.
        #expect(try remove(fcmToken(1), 5_000) == [.tokenRemoved(false)])
        #expect(try remove(fcmToken(1), 5_001) == [.tokenRemoved(true)])
        for topic in ["region:301", "region:302"] {
            #expect(try store.targets(topic, kind: .fcm) == [fcmToken(2)], "\(topic)")
            #expect(try store.targets(topic, kind: .pushToStart) == [token(1)], "\(topic)")
        }
        #expect(try store.topicTargetCount(app: "com.example.eew", environment: .sandbox, topic: "region:302") == 2)
        #expect(try store.tokenOwner(app: "com.example.eew", environment: .sandbox, kind: .fcm, token: fcmToken(1)) == nil)
        let pruned = try #require(try store.installation(id: "android-1"))
        #expect(pruned.fcmToken == nil && pruned.fcmTopics.isEmpty)
        // The same bytes under another kind are another token: not removed.
        #expect(try store.write([.removeToken(app: "com.example.eew", environment: .sandbox, kind: .device, token: Array(fcmToken(2).prefix(64)), registeredBefore: nil)])
            == [.tokenRemoved(false)])
        #expect(try store.targets("region:301", kind: .fcm) == [fcmToken(2)])
        #expect(try store.check().isConsistent)
    }

    @Test func storeStatisticsCountFCMTokensUnderTheirOwnKind() throws {
        let fixture = StoreFixture()
        let store = try fixture.open()
        try store.write([
            .register(registration("ios", token(1)), at: 1_000),
            .register(registration("android-1", fcmToken(1), kind: .fcm), at: 1_000),
            .register(registration("android-2", fcmToken(2), kind: .fcm), at: 1_000),
        ])
        let statistics = try store.statistics()
        #expect(statistics.tokens.map { "\($0.kind.name) \($0.count)" } == ["pushToStart 1", "fcm 2"])
        #expect(statistics.totalTokens == 3 && statistics.installations == 3)
        let json = String(decoding: statistics.json(store: nil), as: UTF8.self)
        #expect(json.contains(#"{"app":"com.example.eew","environment":"sandbox","kind":"fcm","count":2}"#))
    }

    @Test func aLayout5RecordCarriesTheFCMTokenAndOlderLayoutsReadWithout() throws {
        let android = Installation(id: "a", app: "com.example.eew", environment: .production, secretHash: [1, 2],
                                   createdAt: 1_700_000_000_000, updatedAt: 1_700_000_000_500,
                                   fcmToken: fcmToken(1), fcmTopics: [TopicSubscription(name: "region:301", minLevel: 3)])
        let encoded = android.encoded
        #expect(encoded.first == 5)
        #expect(try encoded.withUnsafeBytes { try Installation(id: "a", decoding: $0) } == android)
        // An iOS record in layout 5 ends with an empty FCM token and topic list; without those
        // two bytes it is the layout 4 record schema 5 wrote, which reads as the same installation.
        let ios = Installation(id: "i", app: "com.example.eew", environment: .sandbox, pushToStartToken: token(1),
                               pushToStartTopics: [TopicSubscription(name: "b")], createdAt: 1, updatedAt: 2, broadcast: true)
        let layout5 = ios.encoded
        #expect(layout5.suffix(2) == [0, 0])
        let layout4 = [4] + layout5.dropFirst().dropLast(2)
        #expect(try layout4.withUnsafeBytes { try Installation(id: "i", decoding: $0) } == ios)
        // A layout this build does not know is refused, not guessed at.
        #expect(throws: StoreError.self) { try ([6] + layout5.dropFirst()).withUnsafeBytes { try Installation(id: "i", decoding: $0) } }
    }

    @Test func aSchema5StoreIsMigratedKeepingEveryInstallationAndAcceptsAndroidAfterwards() throws {
        let fixture = StoreFixture()
        let topics = [TopicSubscription(name: "region:301", minLevel: 3)]
        var before: [Installation] = []
        var times: [RegistrationTimes] = []
        var targets: [ScannedTarget] = []
        do {
            let store = try fixture.open()
            var operations: [WriteOperation] = []
            for index in 0..<5 {
                var push = registration("e099ec6c-d736-3ca5-85e7-bb0f1227857\(index)", token(index), topics: topics, broadcast: index % 2 == 0)
                push.registeredAt = 1_700_000_000_000 + UInt64(index)
                operations.append(.register(push, at: 1_000))
                operations.append(.register(registration("plain-\(index)", token(50 + index), kind: .device, topics: topics), at: 2_000))
            }
            try store.write(operations)
            try store.forEachInstallationWithRegistrationTimes { installation, registered in
                before.append(installation)
                times.append(registered)
            }
            targets = try store.scannedTargets("region:301")
            store.close()
        }
        try downgradeToSchema5(fixture.directory)
        #expect(throws: StoreError.self, "a reader does not migrate") { _ = try fixture.open(TokenStore.Options(readOnly: true)) }
        let store = try fixture.open()
        #expect(try store.schemaVersion == 6)
        var after: [Installation] = []
        var afterTimes: [RegistrationTimes] = []
        try store.forEachInstallationWithRegistrationTimes { installation, registered in
            after.append(installation)
            afterTimes.append(registered)
        }
        #expect(after == before && afterTimes == times && after.count == 10)
        #expect(try store.scannedTargets("region:301") == targets && targets.count == 10)
        #expect(try store.check().isConsistent)
        // The migrated store takes Android installations beside the iOS ones.
        try store.write([.register(registration("android", fcmToken(1), kind: .fcm, topics: topics), at: 3_000)])
        #expect(try store.targets("region:301", kind: .fcm) == [fcmToken(1)])
        #expect(try store.scannedTargets("region:301", kind: .pushToStart) == targets.filter { $0.kind == .pushToStart })
    }

    @Test func aReplicatedRecordWithAnFCMTokenIsVersion2AndAnAPNsOnlyOneStaysVersion1() throws {
        let android = registration("android", fcmToken(1), kind: .fcm, topics: [TopicSubscription(name: "region:301", minLevel: 3)])
        let operations: [WriteOperation] = [
            .register(android, at: 7),
            .removeToken(app: "com.example.eew", environment: .production, kind: .fcm, token: fcmToken(2), registeredBefore: 5),
        ]
        let encoded = ReplicatedWrite.encode(operations)
        #expect(encoded.first == 2)
        #expect(try ReplicatedWrite.decode(encoded).map { String(reflecting: $0) } == operations.map { String(reflecting: $0) })
        #expect(ReplicatedWrite.encode([.register(registration("ios", token(1)), at: 7)]).first == 1,
                "a node from before Android support still takes APNs-only records")
    }

    @Test func aReplicatedRecordWithATokenKindThisNodeDoesNotKnowSaysToUpgradeTheNode() throws {
        var encoded = ReplicatedWrite.encode([.removeToken(app: "a", environment: .sandbox, kind: .fcm, token: fcmToken(1), registeredBefore: nil)])
        // version, count, tag, "a" (length + byte), environment: the kind byte follows.
        #expect(encoded[6] == TokenKind.fcm.rawValue)
        encoded[6] = 4
        let error = #expect(throws: StoreError.self) { try ReplicatedWrite.decode(encoded) }
        #expect(error?.description == "replicated write: token kind 4 is unknown to this Sokuho (it knows 1 pushToStart, 2 device, 3 fcm, 3 being Android's FCM tokens); a node running a newer Sokuho wrote it: upgrade this node to the version the other nodes run")
    }

    @Test func aReplicatedFCMRegistrationWithABadTokenOrABroadcastFlagIsRefused() throws {
        let spaced = registration("android", Array("not a token".utf8), kind: .fcm)
        let badToken = #expect(throws: StoreError.self) { try ReplicatedWrite.decode(ReplicatedWrite.encode([.register(spaced, at: 1)])) }
        #expect(badToken?.description.contains("token is not an FCM registration token (11 bytes); one is 1 to 255 characters of A-Z, a-z, 0-9, '_', ':' and '-'") == true)
        let broadcast = registration("android", fcmToken(1), kind: .fcm, broadcast: false)
        let flagged = #expect(throws: StoreError.self) { try ReplicatedWrite.decode(ReplicatedWrite.encode([.register(broadcast, at: 1)])) }
        #expect(flagged?.description.contains("broadcast is for iOS installations") == true)
    }
}

/// Rewrites a store as schema 5 left it: installation records in layout 4 (layout 5 without its
/// empty FCM token and topic list) and version 5. Only iOS installations can be in it.
func downgradeToSchema5(_ directory: String) throws {
    let environment = try LMDBEnvironment(directory: directory, mapSize: 1 << 24, readOnly: false)
    let txn = try environment.begin(readOnly: false)
    let installations = try txn.openDatabase("installations", flags: 0, create: false)!
    var records: [([UInt8], [UInt8])] = []
    try txn.withCursor(installations) { cursor throws(StoreError) in
        var position = try cursor.get(MDB_FIRST)
        while let (key, value) = position {
            precondition(value.first == 5 && value.suffix(2).elementsEqual([0, 0]), "an iOS record in layout 5")
            records.append((Array(key), [4] + value.dropFirst().dropLast(2)))
            position = try cursor.get(MDB_NEXT)
        }
    }
    for (key, value) in records { try txn.put(installations, key, value) }
    let meta = try txn.openDatabase("meta", flags: 0, create: false)!
    try txn.put(meta, StoreSchema.versionKey, [0, 0, 0, 5])
    try txn.commit()
}

/// Android tokens of many lengths beside APNs tokens in the same topics, written the way the
/// API and the demo write them: every scan, at every level and batch size, reads exactly the
/// entries at or below its level. (A scan that stopped part-way through one length's key at the
/// event's level read the next key — a single entry — through the previous key's page: "a topic
/// entry has the wrong size", found by `sokuho demo` with Android phones.)
@Suite struct AndroidTopicLengthTests {
    @Test func aTopicWithTokensOfManyLengthsScansWholeAtEveryLevelAndBatchSize() throws {
        let fixture = StoreFixture()
        let store = try fixture.open()
        var operations: [WriteOperation] = []
        // topic → (minLevel, token) of every entry.
        var entries: [String: [(UInt8, [UInt8])]] = [:]
        for index in 0..<600 {
            let topic = "region:\(index % 7)"
            let level = UInt8(index % 5)
            let topics = [TopicSubscription(name: topic, minLevel: level)]
            if index % 3 == 0 {
                // Lengths 140...162: some keys hold one entry, some several.
                let token = Array(("t\(index):APA91b" + String(repeating: "x", count: 130 + index % 23)).utf8)
                operations.append(.register(registration("a-\(index)", token, kind: .fcm, topics: topics), at: 1_000))
                entries[topic, default: []].append((level, token))
            } else {
                operations.append(.register(registration("i-\(index)", token(index), topics: topics, broadcast: index % 2 == 0), at: 1_000))
                entries[topic, default: []].append((level, token(index)))
            }
            if operations.count == 100 { try store.write(operations); operations.removeAll() }
        }
        for (topic, all) in entries {
            for level: UInt8 in 0...4 {
                let expected = Set(all.filter { $0.0 <= level }.map(\.1))
                for batch in [1, 7, 4096] {
                    let scanned = try store.targets(topic, level: level, batch: batch)
                    #expect(scanned.count == expected.count && Set(scanned) == expected, "\(topic) level \(level) batch \(batch)")
                }
            }
        }
    }
}

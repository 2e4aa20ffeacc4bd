import APNs
import CLMDB
import Testing
@testable import TokenStore

/// iOS 18 broadcast capability: kept per installation, carried by every topic entry, reported by
/// the scan; and the per-target details (min level, watermark) a fan-out resumes from.
@Suite struct BroadcastCapabilityTests {
    let topics = [TopicSubscription(name: "region:301", minLevel: 2), TopicSubscription(name: "region:302")]

    @Test func aNewInstallationIsNotBroadcastCapableUnlessItsRegistrationSays() throws {
        let fixture = StoreFixture()
        let store = try fixture.open()
        try store.write([
            .register(registration("ios17", token(1)), at: 1_000),
            .register(registration("ios18", token(2), broadcast: true), at: 1_000),
        ])
        #expect(try store.installation(id: "ios17")?.broadcast == false)
        #expect(try store.installation(id: "ios18")?.broadcast == true)
        #expect(try store.scannedTargets("region:301").map(\.broadcast) == [false, true])
        #expect(try store.check().isConsistent)
    }

    @Test func changingBroadcastReindexesBothTokensOfTheInstallation() throws {
        let fixture = StoreFixture()
        let store = try fixture.open()
        try store.write([
            .register(registration("install-1", token(1), kind: .pushToStart, topics: topics), at: 1_000),
            .register(registration("install-1", token(2), kind: .device, topics: topics), at: 1_000),
        ])
        #expect(try store.scannedTargets("region:301").allSatisfy { !$0.broadcast })
        // The phone updated to iOS 18 and re-registered its push-to-start token only: the
        // device token's entries carry the flag too.
        try store.write([.register(registration("install-1", token(1), kind: .pushToStart, topics: topics, broadcast: true), at: 2_000)])
        for topic in ["region:301", "region:302"] {
            let targets = try store.scannedTargets(topic)
            #expect(targets.count == 2 && targets.allSatisfy(\.broadcast), "\(topic): \(targets)")
        }
        #expect(try store.installation(id: "install-1")?.broadcast == true)
        var report = try store.check()
        #expect(report.isConsistent, "\(report.problems)")
        #expect(report.topicEntries == 4)
        // A registration that does not say keeps it; one that says false clears it everywhere.
        try store.write([.register(registration("install-1", token(2), kind: .device, topics: topics), at: 3_000)])
        #expect(try store.scannedTargets("region:302").allSatisfy(\.broadcast))
        try store.write([.register(registration("install-1", token(2), kind: .device, topics: topics, broadcast: false), at: 4_000)])
        #expect(try store.scannedTargets("region:301").allSatisfy { !$0.broadcast })
        report = try store.check()
        #expect(report.isConsistent && report.topicEntries == 4, "\(report.problems)")
    }

    @Test func aSortedImportBatchSetsTheFlagOfNewInstallations() throws {
        let fixture = StoreFixture()
        let store = try fixture.open()
        // Longer than `RegistryUpdate.minimumSortedRun`: the sorted path, not one by one.
        let count = RegistryUpdate.minimumSortedRun * 2
        try store.write((0..<count).map { .register(registration("i\($0)", token($0), broadcast: $0 % 2 == 0), at: 1) })
        let targets = try store.scannedTargets("region:301")
        #expect(targets.count == count)
        #expect(targets.filter(\.broadcast).count == count / 2)
        #expect(try store.installation(id: "i2")?.broadcast == true && store.installation(id: "i3")?.broadcast == false)
        #expect(try store.check().isConsistent)
    }

    @Test func aScanReportsEachTargetsKindMinLevelAndBroadcastFlag() throws {
        let fixture = StoreFixture()
        let store = try fixture.open()
        try store.write([
            .register(registration("a", token(1), topics: [TopicSubscription(name: "region:301", minLevel: 4)], broadcast: true), at: 1),
            .register(registration("b", token(2), kind: .device, topics: [TopicSubscription(name: "region:301", minLevel: 1)]), at: 1),
        ])
        // Level first, so b's device token comes before a's push-to-start token.
        #expect(try store.scannedTargets("region:301") == [
            ScannedTarget(token: token(2), kind: .device, minLevel: 1, broadcast: false),
            ScannedTarget(token: token(1), kind: .pushToStart, minLevel: 4, broadcast: true),
        ])
        // The kind filter compares the kind, not the byte that carries the flag.
        #expect(try store.targets("region:301", kind: .pushToStart) == [token(1)])
        #expect(try store.targets("region:301", kind: .device) == [token(2)])
        #expect(try store.targets("region:301", level: 3) == [token(2)])
    }

    @Test func aWatermarkAtATargetResumesRightAfterIt() throws {
        let fixture = StoreFixture()
        let store = try fixture.open()
        // Two token lengths, several levels, both flags, both kinds.
        try store.write((0..<60).map { index in
            .register(registration("i\(index)", token(index, length: index % 3 == 0 ? 64 : 32), kind: index % 4 == 0 ? .device : .pushToStart,
                                   topics: [TopicSubscription(name: "region:301", minLevel: UInt8(index % 5))], broadcast: index % 2 == 0), at: 1)
        })
        let all = try store.scannedTargets("region:301")
        #expect(all.count == 60)
        let scan = store.scanTopic(app: "com.example.eew", environment: .sandbox, topic: "region:301", level: 255, batch: 25)
        var batch = TargetBatch()
        var offset = 0
        var previous: TopicWatermark?
        while try scan.next(into: &batch) {
            for index in 0..<batch.count {
                let mark = batch.watermark(at: index)
                #expect(try store.scannedTargets("region:301", after: mark) == Array(all[(offset + index + 1)...]), "target \(offset + index)")
                #expect(TopicWatermark(bytes: mark.bytes) == mark)
                // Watermarks order as the scan does.
                if let previous { #expect(previous < mark) }
                previous = mark
            }
            // The last target's watermark is where the next batch starts.
            #expect(batch.watermark(at: batch.count - 1) == batch.watermark)
            offset += batch.count
        }
        #expect(offset == 60)
    }

    @Test func aCheckFindsATopicEntryWhoseFlagDisagreesWithItsInstallation() throws {
        let fixture = StoreFixture()
        let store = try fixture.open()
        try store.write([.register(registration("install-1", token(1), topics: [TopicSubscription(name: "region:301")]), at: 1)])
        store.close()
        // The entry as a release that forgot to re-index would leave it.
        let txn = try store.environment.begin(readOnly: false)
        let key = StoreKeys.topic(app: "com.example.eew", environment: .sandbox, topic: "region:301", tokenLength: 32)
        try txn.delete(store.databases.topics, key, value: StoreKeys.topicEntry(minLevel: 0, kind: .pushToStart, broadcast: false, token: token(1)))
        try txn.put(store.databases.topics, key, StoreKeys.topicEntry(minLevel: 0, kind: .pushToStart, broadcast: true, token: token(1)))
        try txn.commit()
        let report = try fixture.open().check()
        #expect(report.problems == ["the pushToStart token …\(TokenStore.tail(token(1))) of installation 'install-1' has broadcast true in topic 'region:301', its installation says false"])
    }
}

import Glibc
import IO
import Testing
@testable import TokenStore

/// Target selection: level filter, stable order, resume from a watermark, bounded batches.
@Suite struct TopicScanTests {
    @Test func onlyTokensWhoseMinimumLevelIsAtMostTheEventsLevel() throws {
        let fixture = StoreFixture()
        let store = try fixture.open()
        try store.write((0..<40).map { index in
            .register(registration("i\(index)", token(index), topics: [TopicSubscription(name: "region:301", minLevel: UInt8(index % 8))]), at: 1)
        })
        #expect(try store.targets("region:301", level: 0).count == 5)
        #expect(try store.targets("region:301", level: 3).count == 20)
        #expect(try store.targets("region:301", level: 7).count == 40)
        #expect(try store.targets("region:30").isEmpty)
        #expect(try store.targets("region:3011").isEmpty)
    }

    @Test func batchesResumeFromTheWatermarkInAStableOrder() throws {
        let fixture = StoreFixture()
        let store = try fixture.open()
        // Two token lengths (separate keys) and several levels; big enough for many LMDB pages.
        var operations: [WriteOperation] = []
        for index in 0..<1500 {
            let length = index % 3 == 0 ? 64 : 32
            operations.append(.register(registration("i\(index)", token(index, length: length),
                                                     topics: [TopicSubscription(name: "region:301", minLevel: UInt8(index % 4))]), at: 1))
        }
        try store.write(operations)
        let all = try store.targets("region:301", level: 2, batch: 100_000)
        #expect(all.count == 1125)
        #expect(Set(all).count == 1125)
        // Any batch size yields the same sequence; each batch is at most its size.
        for size in [1, 7, 128, 1000] {
            let scan = store.scanTopic(app: "com.example.eew", environment: .sandbox, topic: "region:301", level: 2, batch: size)
            var batch = TargetBatch()
            var seen: [[UInt8]] = []
            while try scan.next(into: &batch) {
                #expect(batch.count <= size)
                seen += (0..<batch.count).map { Array(batch.token(at: $0)) }
            }
            #expect(seen == all, "batch size \(size)")
        }
        // A watermark saved after 500 targets resumes at target 501, also from a new scan object.
        let first = store.scanTopic(app: "com.example.eew", environment: .sandbox, topic: "region:301", level: 2, batch: 500)
        var batch = TargetBatch()
        #expect(try first.next(into: &batch))
        let saved = try #require(batch.watermark).bytes
        let resumed = try store.targets("region:301", level: 2, batch: 333, after: TopicWatermark(bytes: saved))
        #expect(resumed == Array(all[500...]))
    }

    @Test func aKeyWithASingleTokenIsFound() throws {
        let fixture = StoreFixture()
        let store = try fixture.open()
        try store.write([.register(registration("only", token(1)), at: 1)])
        #expect(try store.targets("region:301") == [token(1)])
        let scan = store.scanTopic(app: "com.example.eew", environment: .sandbox, topic: "region:301", level: 0)
        var batch = TargetBatch()
        #expect(try scan.next(into: &batch))
        #expect(batch.kinds == [.pushToStart])
        #expect(try !scan.next(into: &batch))
    }

    @Test func readersSeeWholeBatchesWhileTheWriterCommits() throws {
        let fixture = StoreFixture()
        let store = try fixture.open()
        let perBatch = 50
        let batches = 40
        let reader = ScanLoop(store: store)
        reader.start()
        for batch in 0..<batches {
            try store.write((0..<perBatch).map { index in
                let number = batch * perBatch + index
                return .register(registration("i\(number)", token(number)), at: 1)
            })
        }
        let counts = reader.stop()
        #expect(!counts.isEmpty)
        // Every read transaction saw a committed state: a whole number of batches.
        #expect(counts.allSatisfy { $0 % perBatch == 0 }, "\(counts.filter { $0 % perBatch != 0 })")
        #expect(try store.targets("region:301").count == perBatch * batches)
    }

    @Test func theMapGrowsInsteadOfFilling() throws {
        let fixture = StoreFixture()
        // A map of 32 pages fills after a few hundred registrations.
        let store = try fixture.open(TokenStore.Options(mapSize: 128 << 10, maximumBatch: 2_000))
        let before = store.environment.mapSize
        try store.write((0..<3000).map { .register(registration("i\($0)", token($0)), at: 1) })
        #expect(store.environment.mapSize > before)
        #expect(try store.targets("region:301").count == 3000)
        #expect(try store.check().isConsistent)
    }
}

/// Scans one topic in a loop on its own thread, recording how many targets each pass saw.
final class ScanLoop: @unchecked Sendable {
    // @unchecked: `counts` and `running` are only touched inside `lock.withLock`.
    private let store: TokenStore
    private let lock = ConditionLock()
    private var counts: [Int] = []
    private var running = true
    private var thread = pthread_t()

    init(store: TokenStore) { self.store = store }

    func start() {
        let context = Unmanaged.passRetained(self).toOpaque()
        pthread_create(&thread, nil, { context in
            let loop = Unmanaged<ScanLoop>.fromOpaque(context!).takeRetainedValue()
            while loop.lock.withLock({ loop.running }) {
                // One batch as large as the topic: one read transaction per pass.
                let count = (try? loop.store.targets("region:301", batch: 1_000_000).count) ?? -1
                loop.lock.withLock { loop.counts.append(count) }
            }
            return nil
        }, context)
    }

    func stop() -> [Int] {
        lock.withLock { running = false }
        pthread_join(thread, nil)
        return lock.withLock { counts }
    }
}

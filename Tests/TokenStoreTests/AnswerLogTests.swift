import CLMDB
import Testing
@testable import TokenStore

/// A start record's answers written as a log of segments (`AnswerLog`): the store keeps each
/// checkpoint's new answers beside the record, reads the whole set back, drops what a fold or the
/// final record makes redundant, and sweeps segments with their record.
@Suite struct AnswerLogTests {
    static func progress(_ answered: [UInt64], log: AnswerLog?, scanLevel: UInt8? = 5, updatedAt: UInt64 = 1_000) -> StartProgress {
        StartProgress(eventKey: "eew-1", topic: "region:0", app: "com.example.eew", environment: .production, scanLevel: scanLevel,
                      completed: [], submitted: [32, 0, 1] + Array(repeating: 9, count: 32), answered: answered, updatedAt: updatedAt, answerLog: log)
    }

    static func segmentCount(_ store: TokenStore) throws -> Int {
        try store.read { txn throws(StoreError) in
            try txn.withCursor(store.databases.events) { cursor throws(StoreError) in
                var count = 0
                var position = try cursor.get(MDB_FIRST)
                while let (key, value) = position {
                    if case .answers = try EventStoreRecord(key: key, value: value) { count += 1 }
                    position = try cursor.get(MDB_NEXT)
                }
                return count
            }
        }
    }

    @Test func eachCheckpointAddsItsSegmentAndTheRecordReadsBackWithEveryAnswer() throws {
        let fixture = StoreFixture()
        let store = try fixture.open()
        defer { store.close() }
        try store.write([.putStartProgress(Self.progress([1, 2], log: AnswerLog(segment: 0, firstKept: 0)))])
        try store.write([.putStartProgress(Self.progress([3], log: AnswerLog(segment: 1, firstKept: 0)))])
        try store.write([.putStartProgress(Self.progress([], log: AnswerLog(segment: 2, firstKept: 0)))])
        let read = try #require(try store.eventRecords(eventKey: "eew-1").starts.first)
        #expect(Set(read.answered) == [1, 2, 3])
        #expect(read.answered.count == 3)
        #expect(read.answerLog == AnswerLog(segment: 1, firstKept: 0), "the next run numbers on after segment 1")
        #expect(try Self.segmentCount(store) == 2)
    }

    @Test func aFoldDropsTheSegmentsBeforeItAndAFinalRecordDropsThemAll() throws {
        let fixture = StoreFixture()
        let store = try fixture.open()
        defer { store.close() }
        for (number, hashes) in [(0, [1, 2]), (1, [3]), (2, [4])] as [(UInt32, [UInt64])] {
            try store.write([.putStartProgress(Self.progress(hashes, log: AnswerLog(segment: number, firstKept: 0)))])
        }
        try store.write([.putStartProgress(Self.progress([3, 4], log: AnswerLog(segment: 3, firstKept: 3)))])
        #expect(try Self.segmentCount(store) == 1)
        #expect(Set(try #require(try store.eventRecords(eventKey: "eew-1").starts.first).answered) == [3, 4])
        try store.write([.putStartProgress(Self.progress([], log: nil, scanLevel: nil))])
        #expect(try Self.segmentCount(store) == 0)
        #expect(try #require(try store.eventRecords(eventKey: "eew-1").starts.first).answered.isEmpty)
        #expect(try store.check().problems.isEmpty)
    }

    @Test func segmentsGoWithTheirRecordWhenItIsSweptOrTheEventRemoved() throws {
        let fixture = StoreFixture()
        let store = try fixture.open()
        defer { store.close() }
        try store.write([.putStartProgress(Self.progress([1], log: AnswerLog(segment: 0, firstKept: 0), updatedAt: 1_000))])
        try store.write([.putStartProgress(Self.progress([2], log: AnswerLog(segment: 1, firstKept: 0), updatedAt: 2_000))])
        #expect(try store.check().problems.isEmpty, "a store with answer segments checks clean")
        _ = try store.write([.sweepExpired(now: 2_000 + EventStoreRecord.retentionMilliseconds + 1, installationMaxAge: .max)])
        #expect(try Self.segmentCount(store) == 0)
        #expect(try store.eventRecords(eventKey: "eew-1").starts.isEmpty)
        try store.write([.putStartProgress(Self.progress([1], log: AnswerLog(segment: 0, firstKept: 0)))])
        try store.write([.removeEvent(eventKey: "eew-1")])
        #expect(try Self.segmentCount(store) == 0)
    }
}

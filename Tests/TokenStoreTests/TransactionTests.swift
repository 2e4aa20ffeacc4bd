import CLMDB
import Testing
@testable import TokenStore

/// LMDB transactions end exactly once: dropped ones abort and free their reader slot or the
/// writer mutex; a failed commit (which LMDB has already freed) is not aborted again.
@Suite struct TransactionTests {
    @Test func droppedReadTransactionsGiveTheirReaderSlotsBack() throws {
        let fixture = StoreFixture()
        let store = try fixture.open()
        try store.write([.register(registration("inst-1", token(1)), at: 1)])
        // LMDB has 126 reader slots: a leaked read transaction per iteration would end in
        // MDB_READERS_FULL long before 500.
        for _ in 0..<500 {
            let txn = try store.environment.begin(readOnly: true)
            #expect(try txn.get(store.databases.installations, Array("inst-1".utf8)) != nil)
        }
        for _ in 0..<500 {
            #expect(try store.installation(id: "inst-1") != nil)
            #expect(try store.targets("region:301").count == 1)
        }
        // The most slots ever in use at once: the reads above ran one after another.
        #expect(store.environment.readerSlotsUsed <= 2)
        try store.write([.register(registration("inst-2", token(2)), at: 2)])
        #expect(try store.check().installations == 2)
    }

    @Test func aFailedCommitIsNotAbortedAgain() throws {
        let fixture = StoreFixture()
        // A 64 KiB map that nothing grows: writes fail with MDB_MAP_FULL, which marks the
        // transaction failed, so its commit fails too (MDB_BAD_TXN) after LMDB freed it. An
        // abort after that would be a double free; no free at all would keep LMDB's writer
        // mutex locked, and the next write transaction of this thread would never begin.
        let environment = try LMDBEnvironment(directory: fixture.directory, mapSize: 64 << 10, readOnly: false)
        let value = [UInt8](repeating: 7, count: 2000)
        for _ in 0..<200 {
            let txn = try environment.begin(readOnly: false)
            let main = try txn.openDatabase(nil, flags: 0, create: false)!
            var mapFull = false
            for index in 0..<100 {
                do throws(StoreError) {
                    try txn.put(main, Array("key-\(index)".utf8), value)
                } catch {
                    #expect(error.lmdbCode == MDB_MAP_FULL)
                    mapFull = true
                    break
                }
            }
            #expect(mapFull)
            do throws(StoreError) {
                try txn.commit()
                Issue.record("a transaction that hit MDB_MAP_FULL committed")
            } catch {
                #expect(error.lmdbCode == MDB_BAD_TXN)
            }
        }
        let txn = try environment.begin(readOnly: false)
        let main = try txn.openDatabase(nil, flags: 0, create: false)!
        try txn.put(main, Array("small".utf8), [1])
        try txn.commit()
        let reader = try environment.begin(readOnly: true)
        #expect(try reader.get(main, Array("small".utf8)).map(Array.init) == [1])
    }

    @Test func aWriteInAReadOnlyEnvironmentFailsWithoutATransaction() throws {
        let fixture = StoreFixture()
        _ = try fixture.open()
        let environment = try LMDBEnvironment(directory: fixture.directory, mapSize: 1 << 20, readOnly: true)
        for _ in 0..<200 {
            #expect(throws: StoreError.permissionDenied(path: fixture.directory)) {
                _ = try environment.begin(readOnly: false)
            }
        }
        #expect(environment.readerSlotsUsed <= 1)
    }
}

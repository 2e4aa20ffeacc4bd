import CLMDB
import Glibc
import IO

extension TokenStore {
    /// A packed, consistent copy of the live store in `destination` (created if missing; must not
    /// hold a store already). Safe while writers run.
    ///
    /// Not a page copy: `mdb_env_copy2` with `MDB_CP_COMPACT` drops free pages but keeps each page
    /// as full as it is, about two-thirds after random-key inserts (331 B per fresh token at
    /// schema 5). Here every database is written anew in key order with `MDB_APPEND`, which fills
    /// each page before it starts the next, as the schema 4 → 5 migration does.
    ///
    /// One read transaction is the source, so the copy is one snapshot; it pins that snapshot's
    /// pages for the copy's few seconds (writers meanwhile grow the file instead of reusing them).
    /// `meta`, with the format marker, is written last, so a copy cut short is no store; a failed
    /// backup removes its file, so the same destination can be used again.
    public func backup(to destination: String) throws(StoreError) {
        try backup(to: destination, batchBytes: StoreCopy.batchBytes)
    }

    /// `backup(to:)` committing every `batchBytes` (tests make batches end inside a database).
    func backup(to destination: String, batchBytes: Int) throws(StoreError) {
        let file = try TokenStore.claimNewStoreFile(in: destination)
        do {
            try read { source throws(StoreError) in
                // The packed copy needs fewer pages than the live store uses; its map size on top
                // leaves room for the free pages the batch commits leave behind.
                let target = try LMDBEnvironment(directory: destination, mapSize: environment.mapSize + environment.usedBytes,
                                                 readOnly: false, exclusive: true)
                try StoreCopy.copy(source, databases, to: target, batchBytes: batchBytes)
                try target.sync()
            }
        } catch {
            let cause = TokenStore.fullDisk(error, at: destination) // before the space is freed
            _ = unlink(file) // empty or partial: no store, and it would make the next attempt refuse
            throw cause
        }
    }

    /// A short write into a full disk is EIO (see `StoreError.fileSystemIsFull`); checked here on
    /// the destination, whatever path the error names.
    static func fullDisk(_ error: StoreError, at destination: String) -> StoreError {
        guard case let .io(_, code, _) = error, code == EIO, StoreError.fileSystemIsFull(at: destination) else { return error }
        return .diskFull(path: destination)
    }
}

/// Writes every database of a store into a new environment in key order (`TokenStore.backup`):
/// the merge of one source.
enum StoreCopy {
    /// Key and value bytes per write transaction: a transaction keeps its dirty pages in memory
    /// until it commits, so this bounds the copy's memory whatever the store's size.
    static let batchBytes = 64 << 20

    static func copy(_ source: borrowing LMDBTransaction, _ databases: StoreDatabases, to target: LMDBEnvironment,
                     batchBytes: Int) throws(StoreError) {
        let copies = try StoreMerge.createDatabases(in: target)
        let originals = databases.inSchemaOrder
        for index in StoreMerge.databaseOrder {
            // `meta`'s replication outbox and identity stay with the live store (`ReplicationKeys.isLocalOnly`).
            let head = try MergeHead(source.readCursor(originals[index]))
            let copied = try StoreMerge.mergeDatabase([head], to: target, copies[index], duplicates: StoreMerge.isDuplicateSorted(index),
                                                      batchBytes: batchBytes,
                                                      leavingOut: index == 0 ? ReplicationKeys.isLocalOnly : { _ in false })
            // One source holds each key once.
            precondition(copied, "a store holds a key twice")
        }
    }
}

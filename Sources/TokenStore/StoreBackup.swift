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
        try TokenStore.makeDirectory(destination)
        let file = destination + "/data.mdb"
        // O_EXCL: the check that no store is there and the claim of the name are one step, so two
        // backups into one directory cannot both write it.
        let fd = open(file, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o640)
        guard fd >= 0 else {
            if errno == EEXIST { throw StoreError.cannotCreate(path: file, reason: "it already exists; choose an empty directory") }
            throw TokenStore.creationError(errno, path: destination)
        }
        Syscall.expect("close (backup data.mdb)", tolerating: [EINTR, EIO], Glibc.close(fd)) // LMDB opens it again
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
    private static func fullDisk(_ error: StoreError, at destination: String) -> StoreError {
        guard case let .io(_, code, _) = error, code == EIO, StoreError.fileSystemIsFull(at: destination) else { return error }
        return .diskFull(path: destination)
    }
}

/// Writes every database of a store into a new environment in key order (`TokenStore.backup`).
enum StoreCopy {
    /// Key and value bytes per write transaction: a transaction keeps its dirty pages in memory
    /// until it commits, so this bounds the copy's memory whatever the store's size.
    static let batchBytes = 64 << 20

    static func copy(_ source: borrowing LMDBTransaction, _ databases: StoreDatabases, to target: LMDBEnvironment,
                     batchBytes: Int) throws(StoreError) {
        let txn = try target.begin(readOnly: false, sync: false)
        var copies: [MDB_dbi] = []
        for database in StoreSchema.databases {
            copies.append(try txn.openDatabase(database.name, flags: database.flags, create: true)!)
        }
        try txn.commit()
        let originals = databases.inSchemaOrder
        // `meta` leads the schema's list; it goes last (see `TokenStore.backup`).
        for index in Array(originals.indices.dropFirst()) + [0] {
            let duplicates = StoreSchema.databases[index].flags & MDB_DUPSORT != 0
            // `meta`'s replication outbox and identity stay with the live store (`ReplicationKeys.isLocalOnly`).
            try copyDatabase(source, originals[index], to: target, copies[index], duplicates: duplicates, batchBytes: batchBytes,
                             leavingOut: index == 0 ? ReplicationKeys.isLocalOnly : { _ in false })
        }
    }

    /// Copies one database. A new key is appended (`MDB_APPEND`); a further duplicate of a DUPSORT
    /// key is appended to that key's duplicates (`MDB_APPENDDUP` alone, which finds the key: with
    /// `MDB_CURRENT`, as `mdb_load -a` does since LMDB 0.9.28, the 0.9.24 we link would replace
    /// the current duplicate instead).
    private static func copyDatabase(_ source: borrowing LMDBTransaction, _ original: MDB_dbi, to target: LMDBEnvironment,
                                     _ copy: MDB_dbi, duplicates: Bool, batchBytes: Int,
                                     leavingOut: (UnsafeRawBufferPointer) -> Bool) throws(StoreError) {
        try source.withCursor(original) { reader throws(StoreError) in
            var entry = try reader.get(MDB_FIRST)
            var newKey = true
            while case .some = entry {
                let txn = try target.begin(readOnly: false, sync: false)
                try txn.withCursor(copy) { writer throws(StoreError) in
                    var bytes = 0
                    while let (key, value) = entry, bytes < batchBytes {
                        if !leavingOut(key) {
                            try writer.put(key, value, flags: newKey ? MDB_APPEND : MDB_APPENDDUP)
                            bytes += key.count + value.count
                        }
                        if duplicates, let next = try reader.get(MDB_NEXT_DUP) {
                            entry = next
                            newKey = false
                        } else {
                            entry = try reader.get(duplicates ? MDB_NEXT_NODUP : MDB_NEXT)
                            newKey = true
                        }
                    }
                }
                try txn.commit()
            }
        }
    }
}

import CLMDB

/// A live LMDB transaction, owned like the `lmdb` crate's `RoTransaction`/`RwTransaction`:
/// dropping it aborts (`mdb_txn_abort` in `deinit`), and `commit()` consumes it, so a
/// transaction can neither leak (a read transaction holds a reader slot and pins old pages; a
/// write transaction holds LMDB's writer mutex) nor be used or ended after it has ended.
///
/// One type for both modes, chosen at `LMDBEnvironment.begin(readOnly:)`: reads and writes share
/// every lookup and cursor, and the schema code runs unchanged in either (a read-only store opens
/// its schema in a read-only transaction). A write in a read-only transaction fails in LMDB
/// (EACCES). Read-only transactions are not reset and renewed: each read begins a fresh one.
///
/// Byte buffers handed out point into the map and are valid only while the transaction is:
/// callers copy what they keep. Cursors exist only inside `withCursor`, so they end first (a merge's
/// read cursors, `readCursor`, are held beside their transaction).
struct LMDBTransaction: ~Copyable {
    // Only trivially destroyed storage, so that `commit` can `discard self`.
    private let handle: OpaquePointer
    /// Retained for the transaction's lifetime: LMDB requires the environment to outlive it.
    private let environment: Unmanaged<LMDBEnvironment>
    let isReadOnly: Bool

    /// Takes ownership of `handle`, just begun in `environment`.
    init(adopting handle: OpaquePointer, in environment: LMDBEnvironment, readOnly: Bool) {
        self.handle = handle
        self.environment = Unmanaged.passRetained(environment)
        self.isReadOnly = readOnly
    }

    /// Dropped without `commit`: nothing of it is written, and its reader slot is free again.
    deinit {
        mdb_txn_abort(handle)
        environment.release()
    }

    /// Commits and ends the transaction. Committing a read-only transaction keeps the database
    /// handles it opened for later transactions.
    consuming func commit() throws(StoreError) {
        let handle = self.handle
        let environment = self.environment
        // LMDB frees the transaction in mdb_txn_commit whether or not it succeeds: from here on
        // nothing may abort it, so the deinit must not run.
        discard self
        defer { environment.release() }
        try LMDB.check(mdb_txn_commit(handle), "mdb_txn_commit", at: environment.takeUnretainedValue().path)
    }

    /// The store directory, for error messages.
    var path: String { environment.takeUnretainedValue().path }

    /// Opens (and with `create`, creates) the named database `name`; nil when it does not exist.
    /// `name` nil is LMDB's main database, whose keys are the names of the named ones.
    func openDatabase(_ name: String?, flags: Int32, create: Bool) throws(StoreError) -> MDB_dbi? {
        var dbi: MDB_dbi = 0
        let flags = UInt32(flags) | (create ? UInt32(MDB_CREATE) : 0)
        guard try LMDB.succeeded(mdb_dbi_open(handle, name, flags, &dbi), "mdb_dbi_open", unless: MDB_NOTFOUND, at: path) else { return nil }
        return dbi
    }

    /// The value of `key`, pointing into the map, or nil.
    func get(_ dbi: MDB_dbi, _ key: [UInt8]) throws(StoreError) -> UnsafeRawBufferPointer? {
        var data = MDB_val()
        let found = try key.withMDBValue { k throws(StoreError) in
            try LMDB.succeeded(mdb_get(handle, dbi, &k, &data), "mdb_get", unless: MDB_NOTFOUND, at: path)
        }
        return found ? data.bytes : nil
    }

    /// Stores `value` under `key`. `flags`: e.g. MDB_NODUPDATA for an index entry.
    /// Returns false when the flags made LMDB keep an existing entry (MDB_KEYEXIST).
    @discardableResult
    func put(_ dbi: MDB_dbi, _ key: [UInt8], _ value: [UInt8], flags: Int32 = 0) throws(StoreError) -> Bool {
        try key.withMDBValue { k throws(StoreError) in
            try value.withMDBValue { v throws(StoreError) in
                try LMDB.succeeded(mdb_put(handle, dbi, &k, &v, UInt32(flags)), "mdb_put", unless: MDB_KEYEXIST, at: path)
            }
        }
    }

    /// Stores `value` under `key` unless the key exists (one tree search for the common case of
    /// a new key). Returns nil when stored, else the existing value (pointing into the map).
    func insert(_ dbi: MDB_dbi, _ key: [UInt8], _ value: [UInt8]) throws(StoreError) -> UnsafeRawBufferPointer? {
        var existing = MDB_val()
        let stored = try key.withMDBValue { k throws(StoreError) in
            try value.withMDBValue { v throws(StoreError) in
                defer { existing = v } // on MDB_KEYEXIST, LMDB has pointed `v` at the stored value
                return try LMDB.succeeded(mdb_put(handle, dbi, &k, &v, UInt32(MDB_NOOVERWRITE)), "mdb_put", unless: MDB_KEYEXIST, at: path)
            }
        }
        return stored ? nil : existing.bytes
    }

    /// Deletes `key` (with `value`: only that duplicate of a DUPSORT key). Returns whether it existed.
    @discardableResult
    func delete(_ dbi: MDB_dbi, _ key: [UInt8], value: [UInt8]? = nil) throws(StoreError) -> Bool {
        try key.withMDBValue { k throws(StoreError) in
            guard let value else { return try LMDB.succeeded(mdb_del(handle, dbi, &k, nil), "mdb_del", unless: MDB_NOTFOUND, at: path) }
            return try value.withMDBValue { v throws(StoreError) in
                try LMDB.succeeded(mdb_del(handle, dbi, &k, &v), "mdb_del", unless: MDB_NOTFOUND, at: path)
            }
        }
    }

    /// Deletes every entry of a database and keeps the database (`mdb_drop` without delete).
    func removeAll(_ dbi: MDB_dbi) throws(StoreError) {
        try LMDB.check(mdb_drop(handle, dbi, 0), "mdb_drop", at: path)
    }

    /// The number of entries of a database.
    func count(_ dbi: MDB_dbi) throws(StoreError) -> Int { try statistics(dbi).ms_entries }

    /// LMDB's figures for a database: entries, depth, branch, leaf and overflow pages.
    func statistics(_ dbi: MDB_dbi) throws(StoreError) -> MDB_stat {
        var stat = MDB_stat()
        try LMDB.check(mdb_stat(handle, dbi, &stat), "mdb_stat", at: path)
        return stat
    }

    /// Runs `body` with a cursor on `dbi`, closed when `body` returns: a cursor cannot outlive
    /// its transaction (LMDB requires read cursors closed before the transaction ends, and frees
    /// write cursors itself at the end, so closing one later would be a double free).
    func withCursor<R>(_ dbi: MDB_dbi, _ body: (borrowing LMDBCursor) throws(StoreError) -> R) throws(StoreError) -> R {
        var cursor: OpaquePointer?
        try LMDB.check(mdb_cursor_open(handle, dbi, &cursor), "mdb_cursor_open", at: path)
        let owned = LMDBCursor(adopting: cursor!, in: environment)
        return try body(owned)
    }

    /// A cursor on `dbi` owned by the caller, for walking a variable number of databases side by
    /// side (`StoreMerge`), which nested `withCursor` calls cannot hold. Read-only transactions
    /// only: LMDB lets a read cursor be closed before or after its transaction ends, so the order
    /// in which the two are dropped does not matter, but the cursor must not move once the
    /// transaction has ended (its holder keeps both, or drops the cursor first).
    func readCursor(_ dbi: MDB_dbi) throws(StoreError) -> LMDBCursor {
        precondition(isReadOnly, "an owned cursor in a write transaction would be freed by the commit")
        var cursor: OpaquePointer?
        try LMDB.check(mdb_cursor_open(handle, dbi, &cursor), "mdb_cursor_open", at: path)
        return LMDBCursor(adopting: cursor!, in: environment)
    }
}

/// An LMDB cursor, owned by one `withCursor` call and closed when that call returns (or, from
/// `readCursor`, by its holder).
struct LMDBCursor: ~Copyable {
    private let handle: OpaquePointer
    /// Not retained: the transaction that lends this cursor out retains it.
    private let environment: Unmanaged<LMDBEnvironment>

    fileprivate init(adopting handle: OpaquePointer, in environment: Unmanaged<LMDBEnvironment>) {
        self.handle = handle
        self.environment = environment
    }

    deinit { mdb_cursor_close(handle) }

    private var path: String { environment.takeUnretainedValue().path }

    /// Moves the cursor with `op`; returns key and value (pointing into the map), or nil at the end.
    /// `key`/`value` are inputs for the positioning operations (MDB_SET_RANGE, MDB_GET_BOTH_RANGE).
    /// MDB_SET, MDB_GET_BOTH and MDB_GET_BOTH_RANGE leave the key as given, so the key returned
    /// for them points into a temporary that is already gone: test those for nil only, and read
    /// the key with MDB_GET_CURRENT.
    func get(_ op: MDB_cursor_op, key: [UInt8]? = nil, value: [UInt8]? = nil) throws(StoreError)
        -> (key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer)? {
        var keyValue = MDB_val()
        var dataValue = MDB_val()
        let found = try (key ?? []).withMDBValue { k throws(StoreError) in
            try (value ?? []).withMDBValue { v throws(StoreError) in
                if key != nil { keyValue = k }
                if value != nil { dataValue = v }
                return try LMDB.succeeded(mdb_cursor_get(handle, &keyValue, &dataValue, op), "mdb_cursor_get", unless: MDB_NOTFOUND, at: path)
            }
        }
        return found ? (keyValue.bytes, dataValue.bytes) : nil
    }

    /// Stores `value` under `key` through this cursor of a write transaction. The bytes may point
    /// into another environment's map: a backup writes straight from the store it reads.
    /// `flags`: MDB_APPEND, MDB_APPENDDUP (which fail with MDB_KEYEXIST out of order).
    func put(_ key: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer, flags: Int32) throws(StoreError) {
        var k = MDB_val(mv_size: key.count, mv_data: UnsafeMutableRawPointer(mutating: key.baseAddress))
        var v = MDB_val(mv_size: value.count, mv_data: UnsafeMutableRawPointer(mutating: value.baseAddress))
        try LMDB.check(mdb_cursor_put(handle, &k, &v, UInt32(flags)), "mdb_cursor_put", at: path)
    }

    /// The number of duplicates of the current key (DUPSORT).
    func duplicateCount() throws(StoreError) -> Int {
        var count = 0
        try LMDB.check(mdb_cursor_count(handle, &count), "mdb_cursor_count", at: path)
        return count
    }
}

extension Array<UInt8> {
    /// Runs `body` with an MDB_val naming these bytes, for a call that only reads them (LMDB's API
    /// is not const). Typed throws through `withUnsafeBytes`, which only rethrows untyped errors.
    fileprivate func withMDBValue<R>(_ body: (inout MDB_val) throws(StoreError) -> R) throws(StoreError) -> R {
        let result: Result<R, StoreError> = withUnsafeBytes { bytes in
            var value = MDB_val(mv_size: bytes.count, mv_data: UnsafeMutableRawPointer(mutating: bytes.baseAddress))
            do throws(StoreError) { return .success(try body(&value)) } catch { return .failure(error) }
        }
        return try result.get()
    }
}

extension MDB_val {
    /// The bytes an MDB_val names (inside the map, when LMDB filled it in).
    fileprivate var bytes: UnsafeRawBufferPointer { UnsafeRawBufferPointer(start: mv_data, count: mv_size) }
}

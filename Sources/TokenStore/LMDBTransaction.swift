import CLMDB

/// A live LMDB transaction: typed access to get/put/delete and cursors. Byte buffers handed out
/// point into the map and are valid only until the transaction ends: callers copy what they keep.
struct LMDBTransaction {
    let handle: OpaquePointer
    let path: String

    func check(_ rc: Int32) throws(StoreError) {
        if rc != 0 { throw StoreError.from(rc, path: path) }
    }

    func commit() throws(StoreError) { try check(mdb_txn_commit(handle)) }
    func abort() { mdb_txn_abort(handle) }

    /// Opens (and with `create`, creates) the named database `name`; nil when it does not exist.
    /// `name` nil is LMDB's main database, whose keys are the names of the named ones.
    func openDatabase(_ name: String?, flags: Int32, create: Bool) throws(StoreError) -> MDB_dbi? {
        var dbi: MDB_dbi = 0
        let rc = mdb_dbi_open(handle, name, UInt32(flags) | (create ? UInt32(MDB_CREATE) : 0), &dbi)
        if rc == MDB_NOTFOUND { return nil }
        try check(rc)
        return dbi
    }

    /// The value of `key`, pointing into the map, or nil.
    func get(_ dbi: MDB_dbi, _ key: [UInt8]) throws(StoreError) -> UnsafeRawBufferPointer? {
        var data = MDB_val()
        let rc = key.withUnsafeBytes { keyBytes in
            var keyValue = MDB_val(mv_size: keyBytes.count, mv_data: UnsafeMutableRawPointer(mutating: keyBytes.baseAddress))
            return mdb_get(handle, dbi, &keyValue, &data)
        }
        if rc == MDB_NOTFOUND { return nil }
        try check(rc)
        return UnsafeRawBufferPointer(start: data.mv_data, count: data.mv_size)
    }

    /// Stores `value` under `key`. `flags`: e.g. MDB_NODUPDATA for an index entry.
    /// Returns false when the flags made LMDB keep an existing entry (MDB_KEYEXIST).
    @discardableResult
    func put(_ dbi: MDB_dbi, _ key: [UInt8], _ value: [UInt8], flags: Int32 = 0) throws(StoreError) -> Bool {
        let rc = key.withUnsafeBytes { keyBytes in
            value.withUnsafeBytes { valueBytes in
                var keyValue = MDB_val(mv_size: keyBytes.count, mv_data: UnsafeMutableRawPointer(mutating: keyBytes.baseAddress))
                var dataValue = MDB_val(mv_size: valueBytes.count, mv_data: UnsafeMutableRawPointer(mutating: valueBytes.baseAddress))
                return mdb_put(handle, dbi, &keyValue, &dataValue, UInt32(flags))
            }
        }
        if rc == MDB_KEYEXIST { return false }
        try check(rc)
        return true
    }

    /// Stores `value` under `key` unless the key exists (one tree search for the common case of
    /// a new key). Returns nil when stored, else the existing value (pointing into the map).
    func insert(_ dbi: MDB_dbi, _ key: [UInt8], _ value: [UInt8]) throws(StoreError) -> UnsafeRawBufferPointer? {
        var existing = MDB_val()
        let rc = key.withUnsafeBytes { keyBytes in
            value.withUnsafeBytes { valueBytes in
                var keyValue = MDB_val(mv_size: keyBytes.count, mv_data: UnsafeMutableRawPointer(mutating: keyBytes.baseAddress))
                var dataValue = MDB_val(mv_size: valueBytes.count, mv_data: UnsafeMutableRawPointer(mutating: valueBytes.baseAddress))
                let rc = mdb_put(handle, dbi, &keyValue, &dataValue, UInt32(MDB_NOOVERWRITE))
                existing = dataValue
                return rc
            }
        }
        if rc == MDB_KEYEXIST { return UnsafeRawBufferPointer(start: existing.mv_data, count: existing.mv_size) }
        try check(rc)
        return nil
    }

    /// Deletes `key` (with `value`: only that duplicate of a DUPSORT key). Returns whether it existed.
    @discardableResult
    func delete(_ dbi: MDB_dbi, _ key: [UInt8], value: [UInt8]? = nil) throws(StoreError) -> Bool {
        let rc = key.withUnsafeBytes { keyBytes in
            var keyValue = MDB_val(mv_size: keyBytes.count, mv_data: UnsafeMutableRawPointer(mutating: keyBytes.baseAddress))
            guard let value else { return mdb_del(handle, dbi, &keyValue, nil) }
            return value.withUnsafeBytes { valueBytes in
                var dataValue = MDB_val(mv_size: valueBytes.count, mv_data: UnsafeMutableRawPointer(mutating: valueBytes.baseAddress))
                return mdb_del(handle, dbi, &keyValue, &dataValue)
            }
        }
        if rc == MDB_NOTFOUND { return false }
        try check(rc)
        return true
    }

    /// The number of entries of a database.
    func count(_ dbi: MDB_dbi) throws(StoreError) -> Int {
        var stat = MDB_stat()
        try check(mdb_stat(handle, dbi, &stat))
        return stat.ms_entries
    }

    func cursor(_ dbi: MDB_dbi) throws(StoreError) -> LMDBCursor {
        var cursor: OpaquePointer?
        try check(mdb_cursor_open(handle, dbi, &cursor))
        return LMDBCursor(handle: cursor!, path: path)
    }
}

/// An LMDB cursor. Close it before its transaction ends (read transactions require it).
struct LMDBCursor {
    let handle: OpaquePointer
    let path: String

    func close() { mdb_cursor_close(handle) }

    /// Moves the cursor with `op`; returns key and value (pointing into the map), or nil at the end.
    /// `key`/`value` are inputs for the positioning operations (MDB_SET_RANGE, MDB_GET_BOTH_RANGE).
    /// MDB_SET, MDB_GET_BOTH and MDB_GET_BOTH_RANGE leave the key as given, so the key returned
    /// for them points into a temporary that is already gone: test those for nil only, and read
    /// the key with MDB_GET_CURRENT.
    func get(_ op: MDB_cursor_op, key: [UInt8]? = nil, value: [UInt8]? = nil) throws(StoreError)
        -> (key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer)? {
        var keyValue = MDB_val()
        var dataValue = MDB_val()
        let keyBytes = key ?? []
        let valueBytes = value ?? []
        let rc = keyBytes.withUnsafeBytes { k in
            valueBytes.withUnsafeBytes { v in
                if key != nil { keyValue = MDB_val(mv_size: k.count, mv_data: UnsafeMutableRawPointer(mutating: k.baseAddress)) }
                if value != nil { dataValue = MDB_val(mv_size: v.count, mv_data: UnsafeMutableRawPointer(mutating: v.baseAddress)) }
                return mdb_cursor_get(handle, &keyValue, &dataValue, op)
            }
        }
        if rc == MDB_NOTFOUND { return nil }
        if rc != 0 { throw StoreError.from(rc, path: path) }
        return (UnsafeRawBufferPointer(start: keyValue.mv_data, count: keyValue.mv_size),
                UnsafeRawBufferPointer(start: dataValue.mv_data, count: dataValue.mv_size))
    }

    /// The number of duplicates of the current key (DUPSORT).
    func duplicateCount() throws(StoreError) -> Int {
        var count = 0
        let rc = mdb_cursor_count(handle, &count)
        if rc != 0 { throw StoreError.from(rc, path: path) }
        return count
    }
}

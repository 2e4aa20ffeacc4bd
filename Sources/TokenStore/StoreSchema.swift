import CLMDB

/// The handles of a store's named databases (valid for the environment's lifetime).
struct StoreDatabases: Sendable {
    let meta: MDB_dbi
    let installations: MDB_dbi
    let tokens: MDB_dbi
    let topics: MDB_dbi
    let activities: MDB_dbi
    let channels: MDB_dbi
    let events: MDB_dbi
    /// event key → activity ids (DUPSORT): the activities an update or end goes to.
    let activityEvents: MDB_dbi

    /// The handles in the order of `StoreSchema.databases`.
    var inSchemaOrder: [MDB_dbi] { [meta, installations, tokens, topics, activities, channels, events, activityEvents] }
}

/// The store's schema: which databases exist, with which flags, and the migrations that bring an
/// older store up to `currentVersion`. The version and a format marker live in `meta`, so a store
/// from a newer Sokuho and an unrelated LMDB file are both refused with a clear message.
enum StoreSchema {
    static let currentVersion: UInt32 = 6
    static let formatMarker = Array("sokuho-token-store".utf8)
    static let versionKey = Array("schema-version".utf8)
    static let formatKey = Array("format".utf8)

    /// (name, flags) of every database of the current schema.
    static let databases: [(name: String, flags: Int32)] = [
        ("meta", 0),
        ("installations", 0),
        ("tokens", 0),
        ("topics", MDB_DUPSORT | MDB_DUPFIXED),
        ("activities", 0),
        ("channels", 0),
        ("events", 0),
        ("activity-events", MDB_DUPSORT),
    ]

    /// One step from schema `from` to `from + 1`, run inside the opening write transaction.
    struct Migration: Sendable {
        let from: UInt32
        let summary: String
        let run: @Sendable (borrowing LMDBTransaction) throws(StoreError) -> Void
    }

    /// Every migration, in order. Version 0 is an empty LMDB environment.
    static let migrations: [Migration] = [
        Migration(from: 0, summary: "create the databases of schema 1") { txn throws(StoreError) in
            for database in databases.prefix(7) {
                _ = try txn.openDatabase(database.name, flags: database.flags, create: true)
            }
        },
        Migration(from: 1, summary: "index activities by event key") { txn throws(StoreError) in
            let activities = try txn.openDatabase("activities", flags: 0, create: false)!
            let index = try txn.openDatabase("activity-events", flags: MDB_DUPSORT, create: true)!
            try txn.withCursor(activities) { cursor throws(StoreError) in
                var position = try cursor.get(MDB_FIRST)
                while let (key, value) = position {
                    let activity = try ActivityRecord(id: String(decoding: key, as: UTF8.self), decoding: value)
                    try txn.put(index, Array(activity.eventKey.utf8), Array(key), flags: MDB_NODUPDATA)
                    position = try cursor.get(MDB_NEXT)
                }
            }
        },
        // The topic index already holds (kind, token) per entry: only the records change.
        Migration(from: 2, summary: "give each token kind its own topics") { txn throws(StoreError) in
            let installations = try txn.openDatabase("installations", flags: 0, create: false)!
            let rewritten = try txn.withCursor(installations) { cursor throws(StoreError) in
                var rewritten: [(key: [UInt8], value: [UInt8])] = []
                var position = try cursor.get(MDB_FIRST)
                while let (key, value) = position {
                    let installation = try Installation(id: String(decoding: key, as: UTF8.self), decoding: value)
                    rewritten.append((Array(key), installation.encoded))
                    position = try cursor.get(MDB_NEXT)
                }
                return rewritten
            }
            for (key, value) in rewritten { try txn.put(installations, key, value) }
        },
        // Installation layout 3 adds the broadcast flag, but layouts 1 and 2 read as "not
        // broadcast-capable", and so do topic entries without the flag: no record or entry
        // needs rewriting. Event progress records change layout in this release, and nothing
        // wrote them before it: any there would not decode, so they go.
        Migration(from: 3, summary: "iOS 18 broadcast flags; event progress in its new layout") { txn throws(StoreError) in
            let events = try txn.openDatabase("events", flags: 0, create: false)!
            try txn.removeAll(events)
        },
        // Measured on 1M one-topic tokens: 406 MB compacted at schema 4. UUID ids become 17
        // bytes in both places they are stored, times LEB128 (see `StoreKeys.installation`,
        // `StoreKeys.tokenValue`, `Installation.layoutVersion`). Topic entries do not change.
        Migration(from: 4, summary: "UUID installation ids in 16 bytes; LEB128 times") { txn throws(StoreError) in
            let installations = try txn.openDatabase("installations", flags: 0, create: false)!
            let tokens = try txn.openDatabase("tokens", flags: 0, create: false)!
            let records = try rewriteAll(txn, installations) { key, value throws(StoreError) in
                let id = String(decoding: key, as: UTF8.self)
                return (StoreKeys.installation(id), try Installation(id: id, decoding: value).encoded)
            }
            let entries = try rewriteAll(txn, tokens) { key, value throws(StoreError) in
                var reader = RecordReader(value, what: "token entry")
                let registeredAt = try reader.uint64()
                let owner = String(decoding: reader.rest(), as: UTF8.self)
                return (Array(key), StoreKeys.tokenValue(registeredAt: registeredAt, installationID: owner))
            }
            // Refilled in key order with MDB_APPEND: full pages instead of the ~2/3 of random inserts.
            for (dbi, rewritten) in [(installations, records), (tokens, entries)] {
                try txn.removeAll(dbi)
                for (key, value) in rewritten { try txn.put(dbi, key, value, flags: MDB_APPEND) }
            }
        },
        // Android installations: token kind 3 (`TokenKind.fcm`) in token keys and topic entries,
        // installation layout 5. Every schema 5 record and entry reads as it is (layouts 1 to 4
        // as holding no FCM token), so nothing is rewritten: the version is the point. A Sokuho
        // of schema 5 would read an FCM entry as corrupt ("unknown token kind") or, worse, the
        // FCM fields of a layout-5 record as trailing bytes; at version 6 it refuses the store
        // whole with its "newer schema, upgrade Sokuho" message before reading anything.
        Migration(from: 5, summary: "Android (FCM) installations: token kind 3") { _ throws(StoreError) in },
    ]

    /// Every entry of `dbi` rewritten by `body`, sorted by new key (LMDB's order: bytewise, a prefix first).
    private static func rewriteAll(_ txn: borrowing LMDBTransaction, _ dbi: MDB_dbi,
                                   _ body: (UnsafeRawBufferPointer, UnsafeRawBufferPointer) throws(StoreError) -> ([UInt8], [UInt8]))
        throws(StoreError) -> [([UInt8], [UInt8])] {
        var rewritten = try txn.withCursor(dbi) { cursor throws(StoreError) in
            var rewritten: [([UInt8], [UInt8])] = []
            var position = try cursor.get(MDB_FIRST)
            while let (key, value) = position {
                rewritten.append(try body(key, value))
                position = try cursor.get(MDB_NEXT)
            }
            return rewritten
        }
        rewritten.sort { $0.0.lexicographicallyPrecedes($1.0) }
        return rewritten
    }

    /// Opens the schema inside `txn`, first migrating it when `migrate` (a write transaction).
    /// Returns the handles, or throws foreign/newer-schema/missing errors.
    static func open(_ txn: borrowing LMDBTransaction, migrate: Bool) throws(StoreError) -> StoreDatabases {
        var version = try storedVersion(txn)
        if version > currentVersion {
            throw StoreError.newerSchema(path: txn.path, found: version, supported: currentVersion)
        }
        if version < currentVersion {
            guard migrate else {
                if version == 0 { throw StoreError.missing(path: txn.path) }
                throw StoreError.invalid("the token store at \(txn.path) has schema version \(version) and needs an upgrade to \(currentVersion); run any writing command (e.g. sokuho tokens prune --expired) once")
            }
            for migration in migrations where migration.from >= version && migration.from < currentVersion {
                try migration.run(txn)
                version = migration.from + 1
            }
            let meta = try txn.openDatabase("meta", flags: 0, create: true)!
            try txn.put(meta, formatKey, formatMarker)
            var writer = RecordWriter()
            writer.uint32(version)
            try txn.put(meta, versionKey, writer.bytes)
        }
        var handles: [MDB_dbi] = []
        for database in databases {
            guard let handle = try txn.openDatabase(database.name, flags: database.flags, create: false) else {
                throw StoreError.corrupt(path: txn.path, detail: "database '\(database.name)' is missing")
            }
            handles.append(handle)
        }
        return StoreDatabases(meta: handles[0], installations: handles[1], tokens: handles[2], topics: handles[3],
                              activities: handles[4], channels: handles[5], events: handles[6], activityEvents: handles[7])
    }

    /// The schema version recorded in `meta`; 0 for an empty environment. An LMDB file with other
    /// content, or a `meta` without our marker, is foreign.
    static func storedVersion(_ txn: borrowing LMDBTransaction) throws(StoreError) -> UInt32 {
        guard let meta = try txn.openDatabase("meta", flags: 0, create: false) else {
            let main = try txn.openDatabase(nil, flags: 0, create: false)!
            if try txn.count(main) > 0 {
                throw StoreError.foreign(path: txn.path, detail: "an LMDB database without Sokuho's schema")
            }
            return 0
        }
        return try storedVersion(txn, meta: meta)
    }

    /// The schema version, read through the open handle of `meta`. Reads of an open store use
    /// this one: `mdb_dbi_open` must not run in two transactions of one process at once.
    static func storedVersion(_ txn: borrowing LMDBTransaction, meta: MDB_dbi) throws(StoreError) -> UInt32 {
        guard let marker = try txn.get(meta, formatKey), Array(marker) == formatMarker else {
            throw StoreError.foreign(path: txn.path, detail: "an LMDB database without Sokuho's format marker")
        }
        guard let bytes = try txn.get(meta, versionKey) else {
            throw StoreError.corrupt(path: txn.path, detail: "the schema version is missing")
        }
        var reader = RecordReader(bytes, what: "schema version")
        return try reader.uint32()
    }
}

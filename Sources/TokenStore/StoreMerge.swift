import CLMDB
import Glibc
import IO

/// What `TokenStore.merge(parts:into:)` did.
public enum StoreMergeResult: Sendable, Equatable {
    /// The destination holds one packed, synced store with every part's entries.
    case merged
    /// Two parts hold the same key of `database` (an installation, a token, an activity): the
    /// parts do not commute, so their union is not what applying them in order gives. Nothing
    /// is left at the destination.
    case overlapping(database: String)
}

extension TokenStore {
    /// Writes the stores at `parts` as one new store in `destination`, every database in key
    /// order with `MDB_APPEND` (packed as `backup` packs, and synced), reading the parts side by
    /// side (a k-way merge). It is how a large import stays linear (issue 25): the parts are
    /// small stores built from consecutive slices of the input, each cheap because its B-tree
    /// stays small, and the merge reads and writes every entry once, whatever the total.
    ///
    /// The union is the import only when the parts share no key: applying registrations that
    /// share neither an installation nor a token in any order gives the same store
    /// (`RegistrationBatch`), and every shared installation or token is a shared key of
    /// `installations` or `tokens`. A shared key stops the merge (`.overlapping`) and removes
    /// what it wrote; the caller imports another way. `meta` (format and schema) is the first
    /// part's, written last as `backup` does. The parts must be closed by their writers.
    public static func merge(parts: [String], into destination: String) throws(StoreError) -> StoreMergeResult {
        precondition(!parts.isEmpty)
        var sources: [MergeSource] = []
        for part in parts { sources.append(try MergeSource(directory: part)) }
        let file = try claimNewStoreFile(in: destination)
        do {
            // Packed, the merge needs fewer pages than the parts use together; the sum leaves
            // room for the free pages the batch commits leave behind.
            let mapSize = sources.reduce(64 << 20) { $0 + $1.environment.usedBytes }
            let target = try LMDBEnvironment(directory: destination, mapSize: mapSize, readOnly: false, exclusive: true)
            let copies = try StoreMerge.createDatabases(in: target)
            for index in StoreMerge.databaseOrder {
                let meta = index == 0
                var heads: [MergeHead] = []
                for source in meta ? [sources[0]] : sources {
                    heads.append(try MergeHead(source.transaction.readCursor(source.databases.inSchemaOrder[index])))
                }
                let merged = try StoreMerge.mergeDatabase(heads, to: target, copies[index], duplicates: StoreMerge.isDuplicateSorted(index),
                                                          batchBytes: StoreCopy.batchBytes,
                                                          leavingOut: meta ? ReplicationKeys.isLocalOnly : { _ in false })
                guard merged else {
                    _ = unlink(file)
                    return .overlapping(database: StoreSchema.databases[index].name)
                }
            }
            try target.sync()
            return .merged
        } catch {
            let cause = fullDisk(error, at: destination) // before the space is freed
            _ = unlink(file)
            throw cause
        }
    }

    /// Creates `destination` and claims its `data.mdb` (`O_EXCL`: the check that no store is
    /// there and the claim of the name are one step, so two writers of one directory cannot both
    /// write it). Returns the file's path, for removal when the write fails.
    static func claimNewStoreFile(in destination: String) throws(StoreError) -> String {
        try makeDirectory(destination)
        let file = destination + "/data.mdb"
        let fd = open(file, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o640)
        guard fd >= 0 else {
            if errno == EEXIST { throw StoreError.cannotCreate(path: file, reason: "it already exists; choose an empty directory") }
            throw creationError(errno, path: destination)
        }
        Syscall.expect("close (new data.mdb)", tolerating: [EINTR, EIO], Glibc.close(fd)) // LMDB opens it again
        return file
    }
}

/// One part of a merge: its environment, read-only, and one read transaction (the snapshot
/// every database of it is read from). The merge's cursors point into this transaction.
final class MergeSource {
    let environment: LMDBEnvironment
    let transaction: LMDBTransaction
    let databases: StoreDatabases

    init(directory: String) throws(StoreError) {
        // A read-only environment takes the map size the file records when it is larger.
        environment = try LMDBEnvironment(directory: directory, mapSize: 1 << 20, readOnly: true)
        let txn = try environment.begin(readOnly: true)
        databases = try StoreSchema.open(txn, migrate: false)
        transaction = txn
    }
}

/// One source's cursor and the entry it stands on (nil: that source is done). The bytes point
/// into the source's map and stay valid while its transaction lives.
final class MergeHead {
    private let cursor: LMDBCursor
    private(set) var key = UnsafeRawBufferPointer(start: nil, count: 0)
    private(set) var value = UnsafeRawBufferPointer(start: nil, count: 0)
    private(set) var isDone = false

    init(_ cursor: consuming LMDBCursor) throws(StoreError) {
        self.cursor = cursor
        try move(MDB_FIRST)
    }

    /// The next entry: the next duplicate of a DUPSORT key, else the next key.
    func advance() throws(StoreError) { try move(MDB_NEXT) }

    private func move(_ op: MDB_cursor_op) throws(StoreError) {
        if let entry = try cursor.get(op) {
            (key, value) = entry
        } else {
            isDone = true
        }
    }
}

/// The k-way merge behind `TokenStore.merge` and `TokenStore.backup` (a merge of one source).
enum StoreMerge {
    /// Schema order, `meta` last: it holds the format marker, so a copy cut short is no store.
    static var databaseOrder: [Int] { Array(StoreSchema.databases.indices.dropFirst()) + [0] }

    static func isDuplicateSorted(_ index: Int) -> Bool { StoreSchema.databases[index].flags & MDB_DUPSORT != 0 }

    /// Creates the schema's databases in a new environment; their handles in schema order.
    static func createDatabases(in target: LMDBEnvironment) throws(StoreError) -> [MDB_dbi] {
        let txn = try target.begin(readOnly: false, sync: false)
        var copies: [MDB_dbi] = []
        for database in StoreSchema.databases {
            copies.append(try txn.openDatabase(database.name, flags: database.flags, create: true)!)
        }
        try txn.commit()
        return copies
    }

    /// Writes the entries of every head into `copy` in LMDB's order, committing every
    /// `batchBytes` (a transaction keeps its dirty pages in memory until it commits, so this
    /// bounds the merge's memory whatever the size). A new key is appended (`MDB_APPEND`); a
    /// further duplicate of a DUPSORT key is appended to that key's duplicates (`MDB_APPENDDUP`
    /// alone, which finds the key: with `MDB_CURRENT`, as `mdb_load -a` does since LMDB 0.9.28,
    /// the 0.9.24 we link would replace the current duplicate instead). Returns false, having
    /// written part of it, when two heads hold the same key (same key and duplicate, DUPSORT).
    static func mergeDatabase(_ heads: [MergeHead], to target: LMDBEnvironment, _ copy: MDB_dbi, duplicates: Bool,
                              batchBytes: Int, leavingOut: (UnsafeRawBufferPointer) -> Bool) throws(StoreError) -> Bool {
        var queue = MergeQueue(heads, duplicates: duplicates)
        var lastKey: UnsafeRawBufferPointer?
        var lastValue = UnsafeRawBufferPointer(start: nil, count: 0)
        while let first = queue.first {
            var overlapping = false
            let txn = try target.begin(readOnly: false, sync: false)
            try txn.withCursor(copy) { writer throws(StoreError) in
                var bytes = 0
                var next: MergeHead? = first
                while let head = next, bytes < batchBytes {
                    let (key, value) = (head.key, head.value)
                    if !leavingOut(key) {
                        let sameKey = lastKey.map { MergeQueue.order($0, key) == 0 } ?? false
                        if sameKey && (!duplicates || MergeQueue.order(lastValue, value) == 0) {
                            overlapping = true
                            return
                        }
                        try writer.put(key, value, flags: sameKey ? MDB_APPENDDUP : MDB_APPEND)
                        (lastKey, lastValue) = (key, value)
                        bytes += key.count + value.count
                    }
                    try head.advance()
                    queue.headMoved()
                    next = queue.first
                }
            }
            if overlapping { return false }
            try txn.commit()
        }
        return true
    }
}

/// The heads of a merge as a binary min-heap by their entries (key, then duplicate for
/// DUPSORT), so each entry costs about 2·log₂(k) comparisons however many parts there are.
struct MergeQueue {
    private var heap: [MergeHead]
    private let duplicates: Bool

    init(_ heads: [MergeHead], duplicates: Bool) {
        self.duplicates = duplicates
        heap = []
        for head in heads where !head.isDone {
            heap.append(head)
            siftUp(heap.count - 1)
        }
    }

    /// The head with the least entry, nil when every head is done.
    var first: MergeHead? { heap.first }

    /// The first head has moved on: put it where its new entry belongs (or drop it when done).
    mutating func headMoved() {
        if heap[0].isDone {
            let last = heap.removeLast()
            guard !heap.isEmpty else { return }
            heap[0] = last
        }
        siftDown(0)
    }

    /// LMDB's default order (`mdb_cmp_memn`, for keys and for duplicates): bytewise, a prefix first.
    static func order(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Int {
        let common = min(a.count, b.count)
        if common > 0 {
            let result = memcmp(a.baseAddress!, b.baseAddress!, common)
            if result != 0 { return Int(result) }
        }
        return a.count - b.count
    }

    private func less(_ i: Int, _ j: Int) -> Bool {
        let byKey = MergeQueue.order(heap[i].key, heap[j].key)
        if byKey != 0 || !duplicates { return byKey < 0 }
        return MergeQueue.order(heap[i].value, heap[j].value) < 0
    }

    private mutating func siftUp(_ start: Int) {
        var child = start
        while child > 0 {
            let parent = (child - 1) / 2
            guard less(child, parent) else { return }
            heap.swapAt(child, parent)
            child = parent
        }
    }

    private mutating func siftDown(_ start: Int) {
        var parent = start
        while true {
            let left = 2 * parent + 1
            guard left < heap.count else { return }
            var least = left
            if left + 1 < heap.count && less(left + 1, left) { least = left + 1 }
            guard less(least, parent) else { return }
            heap.swapAt(least, parent)
            parent = least
        }
    }
}

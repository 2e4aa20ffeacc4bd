// TokenStore — the LMDB token store.
// - Databases: installations (iOS: push-to-start and device tokens; Android: one FCM token, token
//   kind `fcm` = 3 since schema 6, which an older Sokuho refuses as a newer schema), tokens (with
//   registered-at in ms, for 410 pruning), a `DUPSORT|DUPFIXED` topic index sorted by minimum level
//   (each entry's kind byte carries the installation's iOS 18 broadcast flag), activities,
//   channels, event progress; a schema version with migrations.
// - One writer thread (an IO `OSThread`, its queue on IO's `ConditionLock`, system calls through
//   IO's `Syscall`) that batches and grows the map before `MDB_MAP_FULL`; `MDB_NOTLS` readers.
// - `TopicScan` streams targets (kind, min level, broadcast flag) with a resume watermark, also
//   after any single target.
// - `StoreMerge`: several stores written as one new one in key order with `MDB_APPEND` (a k-way
//   merge; refuses parts that share a key). A backup is its merge of one source; a large import
//   writes small part stores and merges them, so its cost per token does not grow with the total.
// - Replication's store side: `ReplicatedWrite` (the binary codec of the shared operations; a batch
//   carrying an FCM token is version 2, refused by an older node by its version) and
//   StoreReplication.swift (the outbox written in each local write's transaction, the applied
//   stream id written with the changes read from the stream, the replica identity; a backup leaves
//   the outbox and identity out).

import CLMDB
import Glibc

/// The token registry of one store directory (`data.mdb`, LMDB's `lock.mdb`, `writer.lock`).
///
/// Writes go through one writer thread that batches them (`submit`, `write`); reads run in
/// their own `MDB_NOTLS` read-only transactions on the caller's thread and never wait for the
/// writer. Open one `TokenStore` per directory per process (LMDB's rule); several processes may
/// open the same directory.
public final class TokenStore: @unchecked Sendable {
    // @unchecked: the environment is thread-safe, transactions are confined to one call, and the
    // writer thread owns all write state.
    public struct Options: Sendable {
        /// Initial map size in bytes; the map grows by itself when it fills.
        public var mapSize: Int
        /// Open without writing (no writer thread, the store must exist and be current).
        public var readOnly: Bool
        /// How long a write waits for another process's write batch before `StoreError.locked`.
        public var lockTimeout: Double
        /// At most this many operations go into one write transaction.
        public var maximumBatch: Int
        /// Create the directory and an empty store when there is none (else `StoreError.missing`).
        public var create: Bool

        public init(mapSize: Int = 64 << 20, readOnly: Bool = false, create: Bool = true, lockTimeout: Double = 30,
                    maximumBatch: Int = 100_000) {
            self.mapSize = mapSize
            self.readOnly = readOnly
            self.create = create
            self.lockTimeout = lockTimeout
            self.maximumBatch = maximumBatch
        }
    }

    public let directory: String
    let environment: LMDBEnvironment
    let databases: StoreDatabases
    let mapGuard = MapGuard()
    /// Whether local writes fill the replication outbox (`replicate()`, StoreReplication.swift).
    let replication = ReplicationSwitch()
    private let writer: StoreWriter?

    /// Opens the store in `directory`, creating the directory and the store unless `readOnly`,
    /// and migrating an older schema.
    public init(directory: String, options: Options = Options()) throws(StoreError) {
        self.directory = directory
        if options.readOnly || !options.create {
            guard access(directory + "/data.mdb", F_OK) == 0 else {
                throw errno == EACCES ? StoreError.permissionDenied(path: directory) : StoreError.missing(path: directory)
            }
        }
        if !options.readOnly {
            try TokenStore.makeDirectory(directory)
        }
        environment = try LMDBEnvironment(directory: directory, mapSize: options.mapSize, readOnly: options.readOnly)
        // A writing store migrates under the writer lock, so two processes never both migrate.
        var lock: WriterLock?
        if !options.readOnly {
            try environment.clearStaleReaders()
            lock = try WriterLock(directory: directory, timeout: options.lockTimeout)
            try lock?.acquire()
        }
        defer { lock?.release() }
        let txn = try environment.begin(readOnly: options.readOnly)
        do {
            databases = try StoreSchema.open(txn, migrate: !options.readOnly)
        } catch {
            throw error.located(at: directory) // drops `txn`: aborted, nothing migrated
        }
        // Committing (even a read-only transaction) keeps the database handles for later
        // transactions.
        try txn.commit()
        if let lock {
            writer = StoreWriter(environment: environment, databases: databases, mapGuard: mapGuard,
                                 writerLock: lock, maximumBatch: options.maximumBatch, replication: replication)
        } else {
            writer = nil
        }
    }

    deinit { writer?.stop() }

    /// Finishes queued writes and stops the writer thread. Reads keep working.
    public func close() { writer?.stop() }

    // MARK: Writing

    /// Queues `operations` for the writer thread; `done` is called on that thread once the batch
    /// holding them has committed (or failed; then none of them was written). With `durable`
    /// false the commit is not flushed to disk: it survives the process being killed, and the
    /// next durable commit (or the kernel's writeback) takes it to the disk.
    public func submit(_ operations: [WriteOperation], durable: Bool = true,
                       done: @escaping @Sendable (Result<[WriteOutcome], StoreError>) -> Void) throws(StoreError) {
        try submit(operations, durable: durable, role: .local, done: done)
    }

    /// `submit` for a batch of a given role (local changes, or replication's: StoreReplication.swift).
    func submit(_ operations: [WriteOperation], durable: Bool, role: WriteRole,
                done: @escaping @Sendable (Result<[WriteOutcome], StoreError>) -> Void) throws(StoreError) {
        guard let writer else { throw StoreError.invalid("the token store at \(directory) was opened read-only") }
        for operation in operations { try operation.validate() }
        guard writer.submit(operations, durable: durable, role: role, done: done) else {
            throw StoreError.invalid("the token store at \(directory) is closed")
        }
    }

    /// Queues `operations` and returns at once; `wait()` on the ticket blocks until they commit.
    /// Lets a producer (an import) keep parsing while the writer commits its previous chunk.
    public func enqueue(_ operations: [WriteOperation], durable: Bool = true) throws(StoreError) -> WriteTicket {
        let ticket = WriteTicket()
        try submit(operations, durable: durable) { ticket.completion.fulfil($0) }
        return ticket
    }

    /// Writes `operations` and waits until they are committed.
    @discardableResult
    public func write(_ operations: [WriteOperation], durable: Bool = true) throws(StoreError) -> [WriteOutcome] {
        try enqueue(operations, durable: durable).wait()
    }

    /// Writes `operations` without blocking the calling task's thread.
    @discardableResult
    public func write(_ operations: [WriteOperation]) async throws(StoreError) -> [WriteOutcome] {
        let result = await withCheckedContinuation { (continuation: CheckedContinuation<Result<[WriteOutcome], StoreError>, Never>) in
            do throws(StoreError) {
                try submit(operations) { continuation.resume(returning: $0) }
            } catch {
                continuation.resume(returning: .failure(error))
            }
        }
        return try result.get()
    }

    // MARK: Reading

    /// Runs `body` in a fresh read-only transaction (never blocked by the writer).
    /// The transaction is aborted when `body` returns (reads commit nothing).
    func read<T>(_ body: (borrowing LMDBTransaction) throws(StoreError) -> T) throws(StoreError) -> T {
        while true {
            let result = mapGuard.sharedResult { () throws(StoreError) -> T in
                let txn = try environment.begin(readOnly: true)
                return try body(txn)
            }
            switch result {
            case let .success(value): return value
            case let .failure(error) where error.lmdbCode == MDB_MAP_RESIZED:
                // Another process grew the file past our map: adopt its size, then read again.
                try mapGuard.exclusive { () throws(StoreError) in try environment.setMapSize(0) }
            case let .failure(error): throw error.located(at: directory)
            }
        }
    }

    /// The schema version this store has (always `StoreSchema.currentVersion` once open).
    public var schemaVersion: UInt32 {
        get throws(StoreError) { try read { txn throws(StoreError) in try StoreSchema.storedVersion(txn, meta: databases.meta) } }
    }

    public static var currentSchemaVersion: UInt32 { StoreSchema.currentVersion }

    /// `mkdir -p`, with errors phrased for the store.
    static func makeDirectory(_ path: String) throws(StoreError) {
        var partial = path.hasPrefix("/") ? "" : "."
        for component in path.split(separator: "/") {
            partial += "/" + component
            if mkdir(partial, 0o750) != 0 && errno != EEXIST { throw creationError(errno, path: partial) }
        }
    }

    /// The error for `errno` `code` from creating the file or directory `path`.
    static func creationError(_ code: Int32, path: String) -> StoreError {
        switch code {
        case EACCES, EPERM, EROFS: return .permissionDenied(path: path)
        case ENOSPC, EDQUOT: return .diskFull(path: path)
        default: return .cannotCreate(path: path, reason: String(cString: strerror(code)))
        }
    }
}

/// A queued write: `wait()` returns its outcomes once the batch holding it has committed.
public final class WriteTicket: Sendable {
    let completion = Completion<Result<[WriteOutcome], StoreError>>()

    public func wait() throws(StoreError) -> [WriteOutcome] { try completion.wait().get() }
}

extension StoreError {
    /// Errors raised below the store (record decoding) do not know the path; fill it in.
    func located(at path: String) -> StoreError {
        if case let .corrupt(existing, detail) = self, existing.isEmpty { return .corrupt(path: path, detail: detail) }
        return self
    }
}

import CLMDB
import Glibc
import IO

/// The store's one writer thread. Callers queue operations and get a completion; the thread
/// takes everything queued (up to `maximumBatch` operations) into one write transaction, so a
/// thousand registrations cost one commit. Before and during a batch it grows the map, so
/// `MDB_MAP_FULL` never reaches a caller: a full map aborts the batch, grows, and replays it.
final class StoreWriter: @unchecked Sendable {
    // @unchecked: callers share the queue and `thread` (only inside `stopLock`); the rest is the
    // writer thread's own.
    typealias Done = @Sendable (Result<[WriteOutcome], StoreError>) -> Void

    struct Pending {
        let operations: [WriteOperation]
        let done: Done
        /// Whether the commit must reach the disk before `done` (false: surviving a killed process
        /// is enough, e.g. a fan-out checkpoint written many times a second).
        let durable: Bool
        /// Local changes, changes from the cluster's stream, or outbox bookkeeping (`WriteRole`).
        let role: WriteRole
    }

    private let queue = WorkQueue<Pending>()
    private let environment: LMDBEnvironment
    private let databases: StoreDatabases
    private let mapGuard: MapGuard
    private let writerLock: WriterLock
    private let maximumBatch: Int
    private let replication: ReplicationSwitch
    private var thread: OSThread?
    private let stopLock = ConditionLock()

    init(environment: LMDBEnvironment, databases: StoreDatabases, mapGuard: MapGuard, writerLock: WriterLock, maximumBatch: Int,
         replication: ReplicationSwitch) {
        self.environment = environment
        self.databases = databases
        self.mapGuard = mapGuard
        self.writerLock = writerLock
        self.maximumBatch = maximumBatch
        self.replication = replication
        // The thread holds the writer until `run` returns (after `stop` closed the queue). Without a
        // thread no write could ever complete: OSThread stops the process if it cannot start one.
        thread = OSThread.start(name: "sokuho-store") { self.run() }
    }

    /// Queues `operations`; `done` runs on the writer thread after the batch commits or fails.
    func submit(_ operations: [WriteOperation], durable: Bool, role: WriteRole, done: @escaping Done) -> Bool {
        queue.put(Pending(operations: operations, done: done, durable: durable, role: role))
    }

    /// Finishes the queued work, then ends the thread. Safe to call from several threads at once
    /// (`TokenStore.close` is public, and `deinit` calls it again): each returns once the
    /// thread has ended, and only one joins it.
    func stop() {
        stopLock.withLock {
            queue.close()
            // From a `done` callback that drops the last reference to the store, this runs on the
            // writer thread itself, which cannot join itself (EDEADLK): the queue is closed, so its
            // loop ends after the current batch. Any other failure of the join is a bug.
            if let thread, !thread.isCurrent { thread.join() }
            thread = nil
        }
    }

    private func run() {
        while true {
            let batch = queue.take(limit: maximumBatch) { $0.operations.reduce(0) { $0 + $1.weight } }
            if batch.isEmpty { return }
            let result: Result<[WriteOutcome], StoreError>
            do { result = .success(try commit(batch)) } catch { result = .failure(error) }
            switch result {
            case let .success(outcomes):
                var offset = 0
                for pending in batch {
                    let count = pending.operations.count
                    pending.done(.success(Array(outcomes[offset..<offset + count])))
                    offset += count
                }
            case let .failure(error):
                for pending in batch { pending.done(.failure(error)) }
            }
        }
    }

    /// Runs the batch in one transaction: grows the map when it is three quarters used, and on
    /// `MDB_MAP_FULL` grows and replays. Adopts a map another process grew (`MDB_MAP_RESIZED`).
    private func commit(_ batch: [Pending]) throws(StoreError) -> [WriteOutcome] {
        for _ in 0..<64 {
            try growIfNearlyFull()
            try writerLock.acquire()
            defer { writerLock.release() }
            let attempt: Result<[WriteOutcome], StoreError> = mapGuard.sharedResult { () throws(StoreError) in
                // One durable operation makes the whole batch durable.
                let sync = batch.contains { $0.durable }
                let update = RegistryUpdate(txn: try environment.begin(readOnly: false, sync: sync), databases: databases)
                // A throw (MDB_MAP_FULL above all) drops `update`, which aborts its transaction.
                let outcomes = try update.apply(batch: batch.flatMap(\.operations))
                // The outbox and the applied stream id commit with the changes or not at all.
                try update.recordReplication(batch.map { ($0.operations, $0.role) }, replicating: replication.isOn)
                try update.commit()
                return outcomes
            }
            switch attempt {
            case let .success(outcomes): return outcomes
            case let .failure(error) where error.lmdbCode == MDB_MAP_FULL: try grow()
            case let .failure(error) where error.lmdbCode == MDB_MAP_RESIZED: try adoptGrownMap()
            case let .failure(error): throw error
            }
        }
        throw StoreError.io(path: environment.path, code: MDB_MAP_FULL, message: "the batch does not fit even after growing the map 64 times")
    }

    /// Grows the map when it is three quarters used. Map use is read from LMDB's meta pages,
    /// which a reader adopting another process's growth may be remapping: hence the guard.
    private func growIfNearlyFull() throws(StoreError) {
        let nearlyFull = try mapGuard.shared { () throws(StoreError) in environment.usedBytes > environment.mapSize / 4 * 3 }
        if nearlyFull { try grow() }
    }

    /// Doubles the map (up to 1 GiB steps). LMDB files are sparse, so the map is address space,
    /// not disk: the file grows only with the pages written.
    private func grow() throws(StoreError) {
        try mapGuard.exclusive { () throws(StoreError) in
            let current = environment.mapSize
            let step = min(current, 1 << 30)
            try environment.setMapSize(max(current + step, environment.usedBytes * 2))
        }
    }

    private func adoptGrownMap() throws(StoreError) {
        try mapGuard.exclusive { () throws(StoreError) in try environment.setMapSize(0) }
    }
}

extension StoreError {
    /// The LMDB return code behind an `.io` error (MDB_MAP_FULL, MDB_MAP_RESIZED, …).
    var lmdbCode: Int32? {
        if case let .io(_, code, _) = self { return code }
        return nil
    }
}

extension MapGuard {
    /// `shared`, with the error kept in a Result so the caller can branch on it.
    func sharedResult<T>(_ body: () throws(StoreError) -> T) -> Result<T, StoreError> {
        do { return .success(try shared(body)) } catch { return .failure(error) }
    }
}

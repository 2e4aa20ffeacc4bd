import CLMDB
import Glibc

/// The one LMDB environment of a store directory: `data.mdb` and LMDB's `lock.mdb`. Thin on
/// purpose: it opens, reports map use and grows the map; transactions do the rest. The
/// `MDB_env` pointer never leaves this file.
final class LMDBEnvironment: @unchecked Sendable {
    // @unchecked: an MDB_env is thread-safe; `setMapSize` is only called under `MapGuard`'s
    // exclusive lock, when no transaction of this process is active. `mapSize`, `usedBytes` and
    // `pageSize` read LMDB's meta pages inside the map, which `setMapSize` unmaps and maps
    // again: read them only under the guard (shared is enough).
    private let handle: OpaquePointer
    let path: String

    /// Named databases this environment may open (ours plus room for later schemas).
    static let maximumDatabases: UInt32 = 16

    /// `exclusive`: a new environment that only this process writes and nobody reads until it is
    /// finished (a backup being written): no `lock.mdb` (`MDB_NOLOCK`), so the directory ends up
    /// holding `data.mdb` alone.
    init(directory: String, mapSize: Int, readOnly: Bool, exclusive: Bool = false) throws(StoreError) {
        var env: OpaquePointer?
        try LMDB.check(mdb_env_create(&env), "mdb_env_create", at: directory)
        guard let env else { throw StoreError.from(ENOMEM, path: directory) }
        do throws(StoreError) {
            try LMDB.check(mdb_env_set_maxdbs(env, LMDBEnvironment.maximumDatabases), "mdb_env_set_maxdbs", at: directory)
            try LMDB.check(mdb_env_set_mapsize(env, mapSize), "mdb_env_set_mapsize", at: directory)
            // MDB_NOTLS: read transactions are not tied to threads, so a reader may hop threads and
            // one thread may hold several. Readers and the writer thread share the environment.
            let flags = UInt32(MDB_NOTLS) | (readOnly ? UInt32(MDB_RDONLY) : 0) | (exclusive ? UInt32(MDB_NOLOCK) : 0)
            if !exclusive {
                var readers: UInt32 = 0
                try LMDB.check(mdb_env_get_maxreaders(env, &readers), "mdb_env_get_maxreaders", at: directory)
                try Self.allocateLockFile(directory, readers: readers)
            }
            try LMDB.check(mdb_env_open(env, directory, flags, 0o640), "mdb_env_open", at: directory)
        } catch {
            mdb_env_close(env)
            throw error
        }
        self.handle = env
        self.path = directory
    }

    deinit { mdb_env_close(handle) }

    /// Allocates `lock.mdb`'s blocks before LMDB maps it. LMDB creates the lock file with
    /// `ftruncate` (a sparse file) and writes its header and reader slots through a shared mmap:
    /// on a full file system (measured: a full tmpfs) the first such write is a SIGBUS that kills
    /// the process, instead of an error. Allocated here, a full disk is `diskFull` at open, and a
    /// mapped page never needs a block. The size is LMDB 0.9's own: a 192-byte header with the
    /// first reader slot, 64 bytes per further slot (8,192 bytes for the default 126 readers),
    /// rounded up to 4 KiB (a larger file only gives LMDB more reader slots). Other failures
    /// (a read-only directory, no such directory, no fallocate) are left to `mdb_env_open`.
    static func allocateLockFile(_ directory: String, readers: UInt32) throws(StoreError) {
        let size = ((Int(readers) - 1) * 64 + 192 + 4095) & ~4095
        let fd = open(directory + "/lock.mdb", O_RDWR | O_CREAT | O_CLOEXEC, 0o640)
        guard fd >= 0 else { return }
        defer { close(fd) }
        let rc = sokuho_allocate(fd, Int64(size))
        if rc == ENOSPC || rc == EDQUOT { throw .diskFull(path: directory) }
    }

    private var info: MDB_envinfo {
        var info = MDB_envinfo()
        LMDB.expect(mdb_env_info(handle, &info), "mdb_env_info")
        return info
    }

    var pageSize: Int {
        var stat = MDB_stat()
        LMDB.expect(mdb_env_stat(handle, &stat), "mdb_env_stat")
        return Int(stat.ms_psize)
    }

    /// The size of the memory map, the upper bound of the data file.
    var mapSize: Int { info.me_mapsize }

    /// Bytes of the map in use (up to the last page ever allocated).
    var usedBytes: Int { (info.me_last_pgno + 1) * pageSize }

    /// The most reader slots ever in use at once since the lock file was created (LMDB's
    /// `me_numreaders`): what a leaked read transaction would drive up to `MDB_READERS_FULL`.
    var readerSlotsUsed: Int { Int(info.me_numreaders) }

    /// Sets a new map size; 0 adopts the size another process has grown the file to.
    /// Only call with no transaction of this process active (`MapGuard.exclusive`).
    func setMapSize(_ size: Int) throws(StoreError) {
        try LMDB.check(mdb_env_set_mapsize(handle, size), "mdb_env_set_mapsize", at: path)
    }

    /// Frees the reader slots of processes that died inside a read transaction (a killed
    /// `sokuho`), which would otherwise pin old pages and make the file grow. Returns how many.
    @discardableResult
    func clearStaleReaders() throws(StoreError) -> Int {
        var cleared: Int32 = 0
        try LMDB.check(mdb_reader_check(handle, &cleared), "mdb_reader_check", at: path)
        return Int(cleared)
    }

    /// Begins a transaction (a read-only one when `readOnly`). It keeps this environment alive
    /// until it ends. A write transaction with `sync: false` commits without flushing to disk
    /// (`MDB_NOSYNC`): it survives the process being killed (the kernel has the pages) but not a
    /// power loss until the next synced commit flushes it too.
    func begin(readOnly: Bool, sync: Bool = true) throws(StoreError) -> LMDBTransaction {
        var txn: OpaquePointer?
        let flags = readOnly ? UInt32(MDB_RDONLY) : (sync ? 0 : UInt32(MDB_NOSYNC))
        try LMDB.check(mdb_txn_begin(handle, nil, flags, &txn), "mdb_txn_begin", at: path)
        return LMDBTransaction(adopting: txn!, in: self, readOnly: readOnly)
    }

    /// Flushes every commit to the disk, including those made with `sync: false`.
    func sync() throws(StoreError) {
        try LMDB.check(mdb_env_sync(handle, 1), "mdb_env_sync", at: path)
    }
}

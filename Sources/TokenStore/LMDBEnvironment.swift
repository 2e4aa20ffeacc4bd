import CLMDB
import Glibc

/// The one LMDB environment of a store directory: `data.mdb` and LMDB's `lock.mdb`. Thin on
/// purpose: it opens, reports map use and grows the map; transactions do the rest.
final class LMDBEnvironment: @unchecked Sendable {
    // @unchecked: an MDB_env is thread-safe; `setMapSize` is only called under `MapGuard`'s
    // exclusive lock, when no transaction of this process is active. `mapSize`, `usedBytes` and
    // `pageSize` read LMDB's meta pages inside the map, which `setMapSize` unmaps and maps
    // again: read them only under the guard (shared is enough).
    let handle: OpaquePointer
    let path: String

    /// Named databases this environment may open (ours plus room for later schemas).
    static let maximumDatabases: UInt32 = 16

    init(directory: String, mapSize: Int, readOnly: Bool) throws(StoreError) {
        var env: OpaquePointer?
        var rc = mdb_env_create(&env)
        guard rc == 0, let env else { throw StoreError.from(rc, path: directory) }
        _ = mdb_env_set_maxdbs(env, LMDBEnvironment.maximumDatabases)
        _ = mdb_env_set_mapsize(env, mapSize)
        // MDB_NOTLS: read transactions are not tied to threads, so a reader may hop threads and
        // one thread may hold several. Readers and the writer thread share the environment.
        let flags = UInt32(MDB_NOTLS) | (readOnly ? UInt32(MDB_RDONLY) : 0)
        rc = mdb_env_open(env, directory, flags, 0o640)
        guard rc == 0 else {
            mdb_env_close(env)
            throw StoreError.from(rc, path: directory)
        }
        self.handle = env
        self.path = directory
    }

    deinit { mdb_env_close(handle) }

    private var info: MDB_envinfo {
        var info = MDB_envinfo()
        _ = mdb_env_info(handle, &info)
        return info
    }

    var pageSize: Int {
        var stat = MDB_stat()
        _ = mdb_env_stat(handle, &stat)
        return Int(stat.ms_psize)
    }

    /// The size of the memory map, the upper bound of the data file.
    var mapSize: Int { info.me_mapsize }

    /// Bytes of the map in use (up to the last page ever allocated).
    var usedBytes: Int { (info.me_last_pgno + 1) * pageSize }

    /// Sets a new map size; 0 adopts the size another process has grown the file to.
    /// Only call with no transaction of this process active (`MapGuard.exclusive`).
    func setMapSize(_ size: Int) throws(StoreError) {
        let rc = mdb_env_set_mapsize(handle, size)
        guard rc == 0 else { throw StoreError.from(rc, path: path) }
    }

    /// Frees the reader slots of processes that died inside a read transaction (a killed
    /// `sokuho`), which would otherwise pin old pages and make the file grow.
    func clearStaleReaders() {
        var cleared: Int32 = 0
        _ = mdb_reader_check(handle, &cleared)
    }

    /// Begins a transaction (a read-only one when `readOnly`).
    func begin(readOnly: Bool) throws(StoreError) -> LMDBTransaction {
        var txn: OpaquePointer?
        let rc = mdb_txn_begin(handle, nil, readOnly ? UInt32(MDB_RDONLY) : 0, &txn)
        guard rc == 0, let txn else { throw StoreError.from(rc, path: path) }
        return LMDBTransaction(handle: txn, path: path)
    }

    /// A compacting, consistent copy of the environment into the directory `destination`.
    func copy(to destination: String) throws(StoreError) {
        let rc = mdb_env_copy2(handle, destination, UInt32(MDB_CP_COMPACT))
        guard rc == 0 else { throw StoreError.from(rc, path: destination) }
    }
}

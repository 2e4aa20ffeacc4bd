import Glibc

/// Serialises writers of different processes with a bounded wait. LMDB's own writer mutex (in
/// `lock.mdb`) already makes two processes safe, but it waits forever; this `flock` on
/// `writer.lock`, taken around every write transaction, turns a stuck writer elsewhere into a
/// clear `StoreError.locked` after `timeout` seconds. The kernel drops it when a process dies.
final class WriterLock: @unchecked Sendable {
    // @unchecked: used only by the store's writer thread.
    private let descriptor: Int32
    private let directory: String
    let timeout: Double

    init(directory: String, timeout: Double) throws(StoreError) {
        let fd = open(directory + "/writer.lock", O_RDWR | O_CREAT | O_CLOEXEC, 0o640)
        guard fd >= 0 else { throw StoreError.from(errno, path: directory) }
        descriptor = fd
        self.directory = directory
        self.timeout = timeout
    }

    deinit { close(descriptor) }

    /// Takes the lock, polling every 10 ms until `timeout` has passed.
    func acquire() throws(StoreError) {
        let start = WriterLock.now()
        while flock(descriptor, LOCK_EX | LOCK_NB) != 0 {
            guard errno == EWOULDBLOCK || errno == EINTR else { throw StoreError.from(errno, path: directory) }
            let waited = WriterLock.now() - start
            if waited >= timeout { throw StoreError.locked(path: directory, waitedSeconds: waited) }
            usleep(10_000)
        }
    }

    func release() { _ = flock(descriptor, LOCK_UN) }

    private static func now() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
    }
}

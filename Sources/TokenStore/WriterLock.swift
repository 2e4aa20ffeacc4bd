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

    deinit { Posix.expect(close(descriptor), "close (writer.lock)", tolerating: [EINTR, EIO]) }

    /// Takes the lock, polling every 10 ms until `timeout` has passed.
    func acquire() throws(StoreError) {
        let start = WriterLock.now()
        while try !Posix.succeeded(flock(descriptor, LOCK_EX | LOCK_NB), "flock (writer.lock)",
                                   retrying: [EWOULDBLOCK, EINTR], at: directory) {
            let waited = WriterLock.now() - start
            if waited >= timeout { throw StoreError.locked(path: directory, waitedSeconds: waited) }
            Posix.expect(usleep(10_000), "usleep", tolerating: [EINTR])
        }
    }

    /// Unlocking never blocks, so it cannot fail on a descriptor this lock owns: a failure is a bug.
    func release() { Posix.expect(flock(descriptor, LOCK_UN), "flock (unlock writer.lock)") }

    private static func now() -> Double {
        var time = timespec()
        Posix.expect(clock_gettime(CLOCK_MONOTONIC, &time), "clock_gettime")
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
    }
}

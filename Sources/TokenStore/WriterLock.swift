import Glibc
import IO

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

    // EINTR or EIO from close: Linux has freed the descriptor anyway, and a lock file holds no data to lose.
    deinit { Syscall.expect("close (writer.lock)", tolerating: [EINTR, EIO], close(descriptor)) }

    /// Takes the lock, polling every 10 ms until `timeout` has passed.
    func acquire() throws(StoreError) {
        let start = MonotonicInstant.now()
        while try !tryLock() {
            let waited = (MonotonicInstant.now() - start).seconds
            if waited >= timeout { throw StoreError.locked(path: directory, waitedSeconds: waited) }
            Syscall.expect("usleep", tolerating: [EINTR], usleep(10_000)) // cut short by a signal: the poll comes sooner
        }
    }

    /// One non-blocking try: false while another process holds it (EWOULDBLOCK; EINTR is retried
    /// at once), any other failure thrown with the store's path.
    private func tryLock() throws(StoreError) -> Bool {
        do throws(TransportError) {
            return try Syscall.transfer("flock (writer.lock)") { Int(flock(descriptor, LOCK_EX | LOCK_NB)) } != nil
        } catch {
            guard case let .socket(_, code) = error else { throw StoreError.invalid(error.description) }
            throw StoreError.from(code, path: directory)
        }
    }

    /// Unlocking never blocks, so it cannot fail on a descriptor this lock owns: a failure is a bug.
    func release() { Syscall.expect("flock (unlock writer.lock)", flock(descriptor, LOCK_UN)) }
}

import Glibc

/// The one way this module looks at the return codes of libc and pthread calls (the writer's
/// thread, locks and condition variables, the writer lock file). Every int they return is written
/// as the argument of one of these, on the same line, so the rule is grep-able:
///
///     grep -nE '(pthread_[a-z_]+|[^._a-z]flock|[^._a-z]close|clock_gettime|usleep)\(' Sources/TokenStore/*.swift \
///         | grep -vE 'Posix\.|_t\(\)|func close|^Sources/TokenStore/PosixCheck'
///
/// prints nothing. (`open`, `access`, `mkdir`, `stat` and `statvfs`, whose results are a descriptor
/// or a yes/no the callers branch on, are checked where they are called; a failed backup's
/// `unlink` is best effort.)
enum Posix {
    /// pthread functions return the error number itself. A mutex, condition variable or rwlock
    /// that fails to initialise, lock, unlock or be destroyed is a broken process (no memory, a
    /// lock used after being destroyed, an unlock by a thread that does not hold it): going on
    /// would race on the data the lock protects, so stop with the call's name.
    static func expect(pthread rc: Int32, _ what: StaticString) {
        precondition(rc == 0, "\(what) failed: \(String(cString: strerror(rc))) (error \(rc))")
    }

    /// Whether `thread` is the calling thread (`pthread_equal` answers yes or no, not a status).
    static func isCurrentThread(_ thread: pthread_t) -> Bool { pthread_equal(thread, pthread_self()) != 0 }

    /// Calls that return -1 and set errno, with an error the caller can act on. `retrying` codes
    /// (e.g. EWOULDBLOCK from a non-blocking `flock`) make it return false instead of throwing.
    static func succeeded(_ rc: Int32, _ what: StaticString, retrying: [Int32] = [],
                          at path: @autoclosure () -> String) throws(StoreError) -> Bool {
        if rc == 0 { return true }
        let code = errno
        if retrying.contains(code) { return false }
        throw StoreError.from(code, path: path())
    }

    /// -1-and-errno calls whose failure leaves nothing to act on. `tolerating` lists the errno
    /// values that are harmless for that call (see each caller): `close` of the lock file in a
    /// `deinit` reporting EINTR or EIO (Linux has freed the descriptor anyway, and a lock file
    /// holds no data to lose), `usleep` cut short by a signal (the poll just comes sooner). Any
    /// other failure (EBADF: a descriptor closed twice; EINVAL from `clock_gettime`) is a bug.
    static func expect(_ rc: Int32, _ what: StaticString, tolerating: [Int32] = []) {
        guard rc != 0 else { return }
        let code = errno
        precondition(tolerating.contains(code), "\(what) failed: \(String(cString: strerror(code))) (errno \(code))")
    }
}

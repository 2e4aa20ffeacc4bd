#if canImport(Glibc)
import Glibc
#endif

/// Every system call of the runtime goes through here: the return code is checked, EINTR is
/// retried, and a failure becomes a typed error naming the call. (grep rule: outside this file,
/// `Sources/IO` calls the C library only through `Syscall`.)
public enum Syscall {
    /// A call that returns -1 and sets errno on failure.
    @discardableResult @inline(__always)
    public static func check(_ name: StaticString, _ call: () -> Int32) throws(TransportError) -> Int32 {
        while true {
            let rc = call()
            if rc != -1 { return rc }
            if errno == EINTR { continue }
            throw .socket("\(name)", errno)
        }
    }

    /// A call that returns a byte count, -1 and errno on failure; EAGAIN is `nil` (would block).
    @inline(__always)
    public static func transfer(_ name: StaticString, _ call: () -> Int) throws(TransportError) -> Int? {
        while true {
            let n = call()
            if n >= 0 { return n }
            if errno == EINTR { continue }
            if errno == EAGAIN || errno == EWOULDBLOCK { return nil }
            throw .socket("\(name)", errno)
        }
    }

    /// A call whose failure means the process itself is broken (an eventfd or epoll descriptor gone
    /// bad): there is nothing to hand the error to, so stop with the call's name and errno.
    @discardableResult
    public static func mustSucceed(_ name: StaticString, allowing allowed: Int32 = 0, _ call: () -> Int32) -> Int32 {
        do throws(TransportError) {
            return try check(name, call)
        } catch {
            if allowed != 0, case let .socket(_, code) = error, code == allowed { return -1 }
            preconditionFailure("\(name) failed: \(error)")
        }
    }

    /// A call that returns -1 and sets errno, whose failure leaves nothing to act on, and which must
    /// not be retried: `close` (Linux frees the descriptor even when it reports EINTR, so a retry
    /// could close someone else's), `usleep` (cut short is fine). `tolerating` lists the errno values
    /// that are harmless for that call (each caller says why); any other failure (EBADF: a
    /// descriptor closed twice) is a bug: stop with the call's name and errno.
    public static func expect(_ name: StaticString, tolerating tolerated: [Int32] = [], _ rc: Int32) {
        guard rc != 0 else { return }
        let code = errno
        precondition(tolerated.contains(code), "\(name) failed: \(String(cString: strerror(code))) (errno \(code))")
    }

    /// pthread_* calls return the error number instead of setting errno; none of ours may fail.
    public static func pthread(_ name: StaticString, _ rc: Int32) {
        precondition(rc == 0, "\(name) failed: \(String(cString: strerror(rc)))")
    }
}

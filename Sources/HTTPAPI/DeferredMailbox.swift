#if canImport(Glibc)
import Glibc
#endif
import CSystem
import IO
import Vocabulary

/// How other threads reach the server thread: a queue behind a mutex plus an eventfd that a
/// persistent libevent read event watches. Writing an eventfd is a plain system call, safe from any
/// thread, so libevent needs no locking of its own (no evthread_use_pthreads).
final class DeferredMailbox: @unchecked Sendable {
    // @unchecked: the descriptor is set once in init; everything that changes is behind the Lock.
    struct Contents {
        var replies: [(UInt64, HTTPResponse)] = []
        var stopping = false
        /// Set once the loop has ended: replies posted later are dropped.
        var closed = false
    }

    let contents = Lock(Contents())
    private let descriptor: FileDescriptor

    init() {
        descriptor = FileDescriptor(adopting: Syscall.mustSucceed("eventfd") { eventfd(0, Int32(EFD_NONBLOCK | EFD_CLOEXEC)) })
    }

    /// The descriptor libevent watches.
    var fileDescriptor: Int32 { descriptor.rawValue }

    /// Queues a deferred response for the loop thread.
    func post(_ id: UInt64, _ response: HTTPResponse) {
        let queued = contents.withLock { contents -> Bool in
            guard !contents.closed else { return false }
            contents.replies.append((id, response))
            return true
        }
        if queued { wake() }
    }

    /// Asks the loop to end.
    func requestStop() {
        contents.withLock { $0.stopping = true }
        wake()
    }

    /// What was posted since the last call, and whether the loop should end. Called on the loop thread
    /// when the eventfd is readable; resets the eventfd's counter first, so a post that races with this
    /// call wakes the loop again.
    func take() -> (replies: [(UInt64, HTTPResponse)], stopping: Bool) {
        var counter: UInt64 = 0
        let fd = descriptor.rawValue
        // EAGAIN: a spurious wake-up with the counter already 0.
        Syscall.mustSucceed("read(eventfd)", allowing: EAGAIN) { Int32(truncatingIfNeeded: read(fd, &counter, 8)) }
        return contents.withLock { contents in
            defer { contents.replies.removeAll() }
            return (contents.replies, contents.stopping)
        }
    }

    /// No more replies: the requests they were for are gone with the loop.
    func close() { contents.withLock { $0.closed = true; $0.replies.removeAll() } }

    private func wake() {
        var one: UInt64 = 1
        let fd = descriptor.rawValue
        // EAGAIN: the counter is saturated, the loop wakes anyway.
        Syscall.mustSucceed("write(eventfd)", allowing: EAGAIN) { Int32(truncatingIfNeeded: write(fd, &one, 8)) }
    }
}

#if canImport(Glibc)
import Glibc
#endif

/// An open file descriptor with one owner: closed exactly once, when its owner drops it, unless
/// ownership was handed to C code with `release()` (mbedTLS's net context, for instance). Being
/// `~Copyable`, it cannot be duplicated by accident, which is how an fd used to be closed twice.
public struct FileDescriptor: ~Copyable {
    public let rawValue: Int32

    /// Takes ownership of `fd` (from socket, accept, epoll_create…).
    public init(adopting fd: Int32) {
        precondition(fd >= 0, "FileDescriptor(adopting: \(fd))")
        rawValue = fd
    }

    deinit {
        // EINTR after close still closed the descriptor on Linux: never retry. EBADF is a double close.
        if Glibc.close(rawValue) != 0 && errno == EBADF { assertionFailure("fd \(rawValue) closed twice") }
    }

    /// Hands the descriptor to a new owner that closes it (C code); this value no longer does.
    public consuming func release() -> Int32 {
        let fd = rawValue
        discard self
        return fd
    }
}

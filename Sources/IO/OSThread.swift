#if canImport(Glibc)
import Glibc
#endif
import CSystem

/// A plain pthread running one closure: event loops own a thread each (no Task per push).
public final class OSThread: @unchecked Sendable {
    // @unchecked: the handle is written once by start() and read by join() on the starting thread.
    private var handle = pthread_t()
    private let body: @Sendable () -> Void
    private let name: String

    private init(name: String, body: @escaping @Sendable () -> Void) { self.name = String(name.prefix(15)); self.body = body }

    /// Starts `body` on a new thread named `name` (visible in `top -H`).
    @discardableResult
    public static func start(name: String, _ body: @escaping @Sendable () -> Void) -> OSThread {
        let thread = OSThread(name: name, body: body)
        let context = Unmanaged.passRetained(thread).toOpaque()
        let rc = pthread_create(&thread.handle, nil, { raw in
            let me = Unmanaged<OSThread>.fromOpaque(raw!).takeRetainedValue()
            sokuho_set_thread_name(me.name)
            me.body()
            return nil
        }, context)
        Syscall.pthread("pthread_create", rc)

        return thread
    }

    /// Starts `body` on a new thread that nobody joins: its resources go back when it returns.
    public static func startDetached(name: String, _ body: @escaping @Sendable () -> Void) {
        start(name: name, body).detach()
    }

    /// Whether this is the calling thread (which must not join itself: EDEADLK).
    public var isCurrent: Bool { pthread_equal(handle, pthread_self()) != 0 }

    /// Waits for the thread to end.
    public func join() { Syscall.pthread("pthread_join", pthread_join(handle, nil)) }

    /// Lets the thread's resources go back when it ends, without anyone joining it (a thread that
    /// cannot join itself). Joining it afterwards is a bug.
    public func detach() { Syscall.pthread("pthread_detach", pthread_detach(handle)) }
}

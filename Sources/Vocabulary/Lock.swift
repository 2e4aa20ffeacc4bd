import Synchronization

/// The one lock around shared state: `Synchronization.Mutex`, with one addition for the race
/// checker. Mutex on Linux locks with a futex inside libswiftSynchronization, which ThreadSanitizer
/// does not see, so two `withLock` bodies on different threads looked unordered to it and every
/// access they made to the guarded state was reported as a race (a suppression per type then let
/// the next new type fail CI). Toolchain/tsan builds with `-DSOKUHO_TSAN`: each critical section
/// then also passes an atomic acquire on entry and release on exit, which TSan instruments, so it
/// sees the order the futex gives and still reports any access made outside a lock. Other builds
/// compile to the plain Mutex.
public struct Lock<Value: ~Copyable>: ~Copyable, Sendable {
    @usableFromInline let mutex: Mutex<Value>
    #if SOKUHO_TSAN
    @usableFromInline let order = Atomic<Int>(0)
    #endif

    @inlinable
    public init(_ initialValue: consuming sending Value) {
        mutex = Mutex(initialValue)
    }

    /// Runs `body` with the value, holding the lock.
    @inlinable
    public borrowing func withLock<Result: ~Copyable, E: Error>(
        _ body: (inout sending Value) throws(E) -> sending Result
    ) throws(E) -> sending Result {
        try mutex.withLock { (value: inout sending Value) throws(E) -> sending Result in
            #if SOKUHO_TSAN
            _ = order.wrappingAdd(1, ordering: .acquiring)
            defer { _ = order.wrappingAdd(1, ordering: .releasing) }
            #endif
            return try body(&value)
        }
    }
}

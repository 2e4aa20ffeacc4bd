import Vocabulary

/// The store a daemon reads and writes. One holder, shared by its runtime, event queue and
/// registration replication, so a standby can swap the store for a newer backup without any of
/// them keeping the old one.
public final class StoreHolder: Sendable {
    private let store: Lock<TokenStore>

    public init(_ store: TokenStore) { self.store = Lock(store) }

    public var current: TokenStore { store.withLock { $0 } }

    /// Runs `body` with the store under the lock: nobody gets the store meanwhile.
    public func replace(_ body: (inout TokenStore) throws(StoreError) -> Void) throws(StoreError) {
        try store.withLock { (store: inout TokenStore) throws(StoreError) -> Void in try body(&store) }
    }
}

import APNs
import Runtime
import TokenStore

/// What the phones' routes (`InstallationRoutes.swift`) use of the runtime: whether an app is
/// served, the store's installations, its writer, and the ids whose first registration is being
/// written. (Why a protocol of the API: `EventDesk.swift`.)
package protocol InstallationDesk: AnyObject, Sendable {
    /// Whether this daemon serves the app in that environment.
    func serves(_ app: BundleID, _ environment: Environment) -> Bool
    /// The installation `id` (a store read: a worker's).
    func installation(id: String) throws(StoreError) -> Installation?
    /// Queues a durable write; `done` runs on the store's writer thread once it committed or
    /// failed. Throws when the store refuses the operations before queueing them.
    func commit(_ operations: [WriteOperation], done: @escaping @Sendable (Result<[WriteOutcome], StoreError>) -> Void) throws(StoreError)
    /// Claims `id` for a first registration; false when another one holds it.
    func claimRegistration(_ id: String) -> Bool
    /// Gives back a claim, once its write committed or failed.
    func releaseRegistration(_ id: String)
}

extension Service: InstallationDesk {
    package func serves(_ app: BundleID, _ environment: Environment) -> Bool { self.app(app, environment) != nil }

    package func installation(id: String) throws(StoreError) -> Installation? { try store.installation(id: id) }

    package func commit(_ operations: [WriteOperation], done: @escaping @Sendable (Result<[WriteOutcome], StoreError>) -> Void) throws(StoreError) {
        try store.submit(operations, done: done)
    }

    package func claimRegistration(_ id: String) -> Bool { registering.withLock { $0.insert(id).inserted } }

    package func releaseRegistration(_ id: String) { _ = registering.withLock { $0.remove(id) } }
}

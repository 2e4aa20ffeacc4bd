import Runtime
import TokenStore

// The route families' ports (this one, `InstallationDesk`, `ChannelDesk`, `StatusView`) are
// protocols of the API, not types of Runtime: the API is what knows which few calls each family
// makes, Runtime stays free of HTTP-shaped surface, and `Service` conforms in a few forwarding
// lines beside each protocol. A handler takes its port, so it cannot reach the store, the
// cluster or the settings it does not use; `Service` passed as one is a class reference with a
// witness table: no allocation, no lock, no thread.

/// What the event routes (`EventRoutes.swift`, `GET /v1/events`) use of the runtime.
package protocol EventDesk: AnyObject, Sendable {
    /// Validates, checks key and serial against what was sent, records and queues (`Service.submit`).
    func submit(_ body: [UInt8]) -> Service.Submission
    /// The queue's view of `id` (`key/serial`) while it knows the event (in memory: never waits).
    func queuedEvent(_ id: String) -> EventQueue.Entry?
    /// The store's record of an event; nil when there is none or the store cannot be read (blocks: a worker's).
    func recordedEvent(key: String, serial: UInt32) -> EventSerialRecord?
    /// The cluster's view of an event; nil without a cluster (blocks on Redis: a worker's).
    func clusterStatus(key: String, serial: UInt32) -> Service.ClusterStatus?
    /// The last events the queue knows, newest first (`GET /v1/events`).
    func recentEvents() -> [EventQueue.Entry]
}

extension Service: EventDesk {
    package func queuedEvent(_ id: String) -> EventQueue.Entry? { events.entry(id) }

    package func recordedEvent(key: String, serial: UInt32) -> EventSerialRecord? {
        try? store.eventRecords(eventKey: key).serials.first(where: { $0.serial == serial })
    }

    package func recentEvents() -> [EventQueue.Entry] { events.recent() }
}

import JSONCore
import Runtime
import TokenStore

/// What the unauthenticated views (`GET /`, `/readyz`, `/metrics`) and `GET /v1/tokens/stats` read
/// of the runtime: its state, never its tokens, keys or settings. (Why a protocol of the API:
/// `EventDesk.swift`.)
package protocol StatusView: AnyObject, Sendable {
    /// True while a standby (not ready; the page says so).
    var isStandby: Bool { get }
    /// The apps' runtimes: their pools' connections and halts, and their last credential check.
    var runningApps: [AppRuntime] { get }
    /// Events queued and running.
    var eventCounts: (queued: Int, running: Int) { get }
    /// The last `limit` events the queue knows, newest first.
    func recentEvents(limit: Int) -> [EventQueue.Entry]
    /// `/readyz`'s `cluster` member (key and object); nothing without a cluster.
    func clusterReadiness(into writer: inout JSONWriter)
    /// The Prometheus text of `/metrics`.
    func metricsText(tokens: StoreStatistics?) -> String
    /// The cached token statistics if counted within `age`; never blocks on a count.
    func freshTokenStatistics(within age: Duration) -> StoreStatistics?
    /// Token statistics counted within `age`, counting if need be; nil when the store cannot be
    /// read. Blocks: a worker's (`TokenStatisticsCache`).
    func countedTokenStatistics(within age: Duration) -> StoreStatistics?
}

extension Service: StatusView {
    package var runningApps: [AppRuntime] { apps.withLock { $0 } }

    package var eventCounts: (queued: Int, running: Int) { events.counts }

    package func recentEvents(limit: Int) -> [EventQueue.Entry] { events.recent(limit: limit) }

    package func clusterReadiness(into writer: inout JSONWriter) {
        if let replication { writer.key("cluster"); replication.readiness(into: &writer) }
    }

    package func metricsText(tokens: StoreStatistics?) -> String { metrics.render(self, tokens: tokens) }

    package func freshTokenStatistics(within age: Duration) -> StoreStatistics? { tokenStatistics.fresh(within: age) }

    package func countedTokenStatistics(within age: Duration) -> StoreStatistics? {
        tokenStatistics.refreshed(within: age) { store }
    }
}

import Cluster
import DaemonConfiguration
import Redis
import Fanout
import IO
import JSONCore
import TokenStore
import Vocabulary

/// Events in a cluster: an event submitted to any node is offered to the cluster's ledger in Redis
/// (dedup by key and serial across every node, then one stream entry per shard — `EventLedger`),
/// and the nodes' `ShardWorkers` send the shards. Its report is the sum of its shards' reports,
/// read from the ledger by whichever node is asked.
///
/// Redis unreachable: the node runs the event alone from its own store, as a single node would
/// (counted in `sokuho_cluster_events_alone_total`; `/readyz` says the cluster is degraded). Its
/// dedup is then this node's only: resubmitted once Redis is back, the same key and serial is
/// recognised by this node's record (it answers from it), not by the other nodes'.
package enum ClusterEvents {
    /// A shard's report that says why it could not be sent (it counts as stopped).
    package static func errorReport(_ message: String) -> [UInt8] {
        var report = FanoutReport()
        report.stopped = message
        return report.json
    }

    /// The event's report: its shards' reports added up (`seconds` is the longest shard's: they
    /// run side by side), with the first reason any shard stopped.
    package static func sum(_ reports: [FanoutReport]) -> FanoutReport {
        guard var total = reports.first else { return FanoutReport() }
        for report in reports.dropFirst() {
            total = total.adding(report)
            total.stopped = total.stopped ?? report.stopped
        }
        total.seconds = reports.map(\.seconds).max() ?? 0
        total.runs = reports.map(\.runs).max() ?? 1
        return total
    }

    /// `GET /v1/events/{key}/{serial}` for a cluster event: state, summed report, and each shard.
    package static func status(id: String, ledger: EventLedgerEntry) -> [UInt8] {
        let reports = ledger.shards.compactMap { $0.report.flatMap(FanoutReport.init(json:)) }
        let state: String
        if ledger.isDone {
            state = reports.contains { $0.stopped != nil } ? "stopped" : "done"
        } else {
            state = ledger.shards.contains { $0.owner != nil || $0.report != nil } ? "running" : "queued"
        }
        var writer = JSONWriter()
        writer.beginObject()
        writer.key("id"); writer.string(id)
        writer.key("state"); writer.string(state)
        writer.key("acceptedBy"); writer.string(ledger.acceptedBy)
        writer.key("report"); if reports.isEmpty { writer.null() } else { writer.raw(sum(reports).json) }
        writer.key("shards"); writer.beginArray()
        for (index, shard) in ledger.shards.enumerated() {
            writer.beginObject()
            writer.key("shard"); writer.int(index)
            writer.key("state"); writer.string(shard.report != nil ? "done" : shard.owner != nil ? "running" : "queued")
            writer.key("node"); if let owner = shard.owner { writer.string(owner) } else { writer.null() }
            writer.key("fence"); writer.int(Int(shard.fence))
            writer.key("report"); if let report = shard.report { writer.raw(report) } else { writer.null() }
            writer.endObject()
        }
        writer.endArray()
        writer.endObject()
        return writer.bytes
    }
}

extension Service {
    /// Offers a checked event to the cluster. Nil: Redis is unreachable — the caller runs it here.
    package func submitToCluster(_ event: FanoutEvent, bodyHash: [UInt8], cluster: ClusterNode) -> Submission? {
        let shards = cluster.settings.shards
        if event.key.utf8.count + ShardRecordKey.overhead > StoreLimits.maximumNameBytes {
            return .refused(.invalidEvent, message: "key: is \(event.key.utf8.count) bytes; in a cluster at most \(StoreLimits.maximumNameBytes - ShardRecordKey.overhead) (each shard's records add to it)")
        }
        // A group with an auto channel creates its channel on first use: one node must do that, so
        // such an event is one shard (the node that takes it creates the channel for all of it).
        let count = event.groups.contains { $0.channel == .auto } ? 1 : shards
        let accept = { () throws(RedisError) -> EventAcceptance in
            try cluster.api { connection throws(RedisError) in
                try connection.acceptEvent(key: event.key, serial: event.serial, bodyHash: bodyHash, body: event.canonicalJSON, shards: count,
                                           node: cluster.node, now: WallClock.milliseconds())
            }
        }
        let answer: EventAcceptance
        do {
            answer = try accept()
        } catch {
            switch error {
            case .connectFailed:
                return nil  // never reached Redis: nothing was recorded there, so this node runs it
            case .connectionLost:
                // Sent, then the connection broke: Redis may have accepted it. Asking again on a new
                // connection answers `same` if it did — and running it here as well could send it twice.
                do { answer = try accept() } catch {
                    return .refused(.clusterUnavailable, message: "the connection to the cluster's Redis broke while it took the event (\(error.description)); it may have been accepted: "
                                        + "send the same event again (same key, serial and body) — it is sent at most once")
                }
            default:
                return .refused(.clusterUnavailable, message: "the cluster's Redis refused the event: \(error.description)")
            }
        }
        let id = EventQueue.id(key: event.key, serial: event.serial)
        switch answer {
        case .new:
            return .acceptedByCluster(id: id)
        case let .superseded(higher):
            return .refused(.superseded, message: "serial: \(event.serial) is older than serial \(higher) of '\(event.key)', already accepted by the cluster; send a higher serial")
        case .conflict:
            return .refused(.conflict, message: "serial: \(event.serial) of '\(event.key)' was already accepted by the cluster with a different body; give new content a higher serial")
        case .same:
            if let ledger = try? cluster.api({ connection throws(RedisError) in try connection.eventLedger(key: event.key, serial: event.serial) }),
               ledger.isDone {
                var report = ClusterEvents.sum(ledger.shards.compactMap { $0.report.flatMap(FanoutReport.init(json:)) })
                report.eventKey = event.key
                report.serial = event.serial
                return .alreadySent(report)
            }
            return .acceptedByCluster(id: id)
        }
    }

    /// The cluster's view of an event, or nil when there is no cluster, Redis is unreachable, or
    /// the cluster does not know the event.
    package func clusterStatus(key: String, serial: UInt32) -> [UInt8]? {
        guard let cluster else { return nil }
        let ledger = try? cluster.api { connection throws(RedisError) in try connection.eventLedger(key: key, serial: serial) }
        return ledger.flatMap { $0 }.map { ClusterEvents.status(id: EventQueue.id(key: key, serial: serial), ledger: $0) }
    }
}

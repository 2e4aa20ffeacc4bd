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
/// Redis unreachable: the node runs a **new** key alone from its own store, as a single node would
/// (counted in `sokuho_cluster_events_alone_total`; `/readyz` says the cluster is degraded). Its
/// dedup is then this node's only: resubmitted once Redis is back, the same key and serial is
/// recognised by this node's record (it answers from it), not by the other nodes'. A key this
/// node offered to the cluster before is in doubt and refused until Redis answers
/// (`ClusterAcceptances`).
package enum ClusterEvents {
    /// A shard's report that says why it could not be sent (it counts as stopped).
    package static func errorReport(_ message: String) -> [UInt8] {
        var report = FanoutReport()
        report.stopped = message
        return report.json
    }

    /// The report of a shard a later serial of its key superseded before it began: nothing sent.
    package static func supersededReport(by newer: UInt32) -> [UInt8] {
        var report = FanoutReport()
        report.supersededBy = newer
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

    /// `GET /v1/events/{key}/{serial}` for a cluster event Redis accepted and no longer has.
    package static func lostStatus(id: String, acceptedBy: String) -> [UInt8] {
        var writer = JSONWriter()
        writer.beginObject()
        writer.key("id"); writer.string(id)
        writer.key("state"); writer.string("lost")
        writer.key("acceptedBy"); writer.string(acceptedBy)
        writer.key("report"); writer.null()
        writer.key("shards"); writer.beginArray(); writer.endArray()
        writer.endObject()
        return writer.bytes
    }

    /// The event's report from its ledger's shard reports.
    package static func report(of ledger: EventLedgerEntry, key: String, serial: UInt32) -> FanoutReport {
        var report = sum(ledger.shards.compactMap { $0.report.flatMap(FanoutReport.init(json:)) })
        report.eventKey = key
        report.serial = serial
        return report
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
    /// Offers a checked event to the cluster. Nil: Redis was never reached and this node never
    /// offered the key before — the caller runs it here alone. A key this node offered before
    /// (`ClusterAcceptances`) is in doubt while Redis is away: refused, to be sent again.
    package func submitToCluster(_ event: FanoutEvent, bodyHash: [UInt8], cluster: ClusterNode, warnings: [String] = []) -> Submission? {
        let shards = cluster.settings.shards
        if event.key.utf8.count + ShardRecordKey.overhead > StoreLimits.maximumNameBytes {
            return .refused(.invalidEvent, message: "key: is \(event.key.utf8.count) bytes; in a cluster at most \(StoreLimits.maximumNameBytes - ShardRecordKey.overhead) (each shard's records add to it)")
        }
        // Every shard of this serial ended (their records are every node's): it was sent, whatever
        // Redis remembers now — a Redis restarted empty would take it as new and send it again.
        if let finished = finishedShards(key: event.key, serial: event.serial, cluster: cluster, bodyHash: bodyHash) {
            return .alreadySent(ClusterEvents.report(of: finished, key: event.key, serial: event.serial))
        }
        // What this node asked of the cluster before, and its ask for this serial, written before
        // the script is sent: a crash or a lost answer after it leaves the key in doubt, not free.
        let known: [ClusterAcceptances.Record]
        let askedAt = WallClock.milliseconds()
        do {
            known = try ClusterAcceptances.records(key: event.key, in: store)
            if !known.contains(where: { $0.serial == event.serial }) {
                try ClusterAcceptances.note(.asked, key: event.key, serial: event.serial, bodyHash: bodyHash, body: event.canonicalJSON, askedAt: askedAt, in: store)
            }
        } catch {
            return .refused(.storeUnavailable, message: error.description)
        }
        // This serial again, which Redis said it had — to this node, or to another whose shards
        // of it left their records here: if Redis has lost it since, the accept script would take
        // it as new and send it a second time to every phone that got it.
        let earlier = known.first { $0.serial == event.serial && $0.state != .asked }
        let shardsRan = (try? store.shardSerials(eventKey: event.key))?.contains(where: EventAdmission(serial: event.serial, bodyHash: bodyHash).isSame) ?? false
        if earlier != nil || shardsRan {
            let has: Bool
            do { has = try cluster.read { connection throws(RedisError) in try connection.eventLedger(key: event.key, serial: event.serial) != nil } } catch {
                if earlier != nil { return inDoubt(event, known: known, problem: error.description) }
                return .refused(.clusterUnavailable, message: "serial: \(event.serial) of '\(event.key)' was being sent by the cluster (its shards' records are on this node), "
                                    + "and the cluster's Redis cannot be reached (\(error.description)); running it here alone could send it a second time: send the same event again after Retry-After")
            }
            if !has, let finished = finishedShards(key: event.key, serial: event.serial, cluster: cluster) {
                return .alreadySent(ClusterEvents.report(of: finished, key: event.key, serial: event.serial))
            }
            if !has {
                if let earlier { noteLost(key: event.key, serial: event.serial, record: earlier, cluster: cluster) }
                return .refused(.lost, message: "serial: \(event.serial) of '\(event.key)' was accepted by the cluster, whose Redis has lost it since (restarted without an append-only file, or flushed); "
                                    + "what it sent is not known. Send the event with a higher serial to reach the phones it missed: the phones its shards' checkpoints "
                                    + "record as started are not started again (only those in flight on a node that died with it may be)")
            }
        }
        if let stopping = earlierSerialStillStopping(key: event.key, serial: event.serial, cluster: cluster) {
            return .refused(.clusterUnavailable, message: "serial \(stopping.serial) of '\(event.key)' was being sent by the cluster when its Redis lost it (restarted without an append-only file, or flushed), "
                                + "and its shard \(stopping.shard) may still be stopping on a node: serial \(event.serial) accepted now could start again the phones it is sending. "
                                + "Send the same event again after Retry-After; it is taken once that shard's last checkpoint has reached this node")
        }
        // A group with an auto channel creates its channel on first use: one node must do that, so
        // such an event is one shard (the node that takes it creates the channel for all of it).
        let count = event.groups.contains { $0.channel == .auto } ? 1 : shards
        let accept = { () throws(RedisError) -> EventAcceptance in
            try cluster.api { connection throws(RedisError) in
                try connection.acceptEvent(key: event.key, serial: event.serial, bodyHash: bodyHash, body: event.canonicalJSON, shards: count,
                                           node: cluster.node, now: askedAt)
            }
        }
        let answer: EventAcceptance
        do {
            answer = try accept()
        } catch {
            switch error {
            case .connectFailed:
                // Never reached Redis: nothing of this ask was recorded there. A key this node
                // never offered before runs here; one it did may be the cluster's already.
                guard known.isEmpty else { return inDoubt(event, known: known, problem: error.description) }
                do { try ClusterAcceptances.forget(key: event.key, in: store) } catch {
                    return .refused(.storeUnavailable, message: error.description)
                }
                return nil
            case .connectionLost:
                // Sent, then the connection broke: Redis may have accepted it. Asking again on a new
                // connection answers `same` if it did — and running it here as well could send it twice.
                do { answer = try accept() } catch {
                    return .refused(.clusterUnavailable, message: "the connection to the cluster's Redis broke while it took the event (\(error.description)); it may have been accepted: "
                                        + "send the same event again (same key, serial and body) once Redis answers — it is sent at most once; until then this node refuses the key")
                }
            default:
                return .refused(.clusterUnavailable, message: "the cluster's Redis refused the event: \(error.description)")
            }
        }
        let id = EventQueue.id(key: event.key, serial: event.serial)
        switch answer {
        case .new, .same:
            do { try ClusterAcceptances.note(.accepted, key: event.key, serial: event.serial, bodyHash: bodyHash, body: event.canonicalJSON,
                                             askedAt: known.first { $0.serial == event.serial }?.askedAt ?? askedAt, in: store) } catch {
                // Redis has it and will send it; only this node's memory of it failed.
                logger.warning("cluster: event '\(event.key)' serial \(event.serial) accepted, but this node could not note it in its store: \(error.description)")
            }
            if answer == .same, let ledger = try? cluster.read({ connection throws(RedisError) in try connection.eventLedger(key: event.key, serial: event.serial) }),
               ledger.isDone {
                return .alreadySent(ClusterEvents.report(of: ledger, key: event.key, serial: event.serial))
            }
            logger.info("event accepted", Self.eventFields(event) + [("cluster", .text(cluster.node))])
            return .acceptedByCluster(id: id, warnings: warnings)
        case let .superseded(higher):
            return .refused(.superseded, message: "serial: \(event.serial) is older than serial \(higher) of '\(event.key)', already accepted by the cluster; send a higher serial")
        case .conflict:
            return .refused(.conflict, message: "serial: \(event.serial) of '\(event.key)' was already accepted by the cluster with a different body; give new content a higher serial")
        }
    }

    /// The refusal of a key this node offered to the cluster before, while Redis cannot be reached.
    private func inDoubt(_ event: FanoutEvent, known: [ClusterAcceptances.Record], problem: String) -> Submission {
        let accepted = known.contains { $0.state != .asked }
        let what = accepted ? "the cluster accepted serial(s) \(known.map(\.serial).sorted().map(String.init).joined(separator: ", ")) of this key from this node"
            : "this node offered this key to the cluster and did not learn whether it was accepted"
        return .refused(.clusterUnavailable, message: "key '\(event.key)' is in doubt: \(what), and the cluster's Redis cannot be reached (\(problem)). "
                            + "Running it here alone could send it a second time: send the same event again after Retry-After; it runs once Redis answers")
    }

    /// The cluster's view of an event, as `GET /v1/events/{key}/{serial}` gives it.
    package enum ClusterStatus {
        /// The ledger's status JSON (also for an event Redis lost: state `lost`).
        case found([UInt8])
        /// Redis answered and knows nothing of it, nor does this node.
        case unknown
        /// Redis cannot be reached: whether the event exists is not known here.
        case unreachable(String)
    }

    /// The cluster's view of an event; nil without a cluster.
    package func clusterStatus(key: String, serial: UInt32) -> ClusterStatus? {
        guard let cluster else { return nil }
        let id = EventQueue.id(key: key, serial: serial)
        let ledger: EventLedgerEntry?
        do { ledger = try cluster.read { connection throws(RedisError) in try connection.eventLedger(key: key, serial: serial) } } catch {
            // A finished event's shards' records say how it ended; nothing Redis holds changes that.
            if let finished = finishedShards(key: key, serial: serial, cluster: cluster) { return .found(ClusterEvents.status(id: id, ledger: finished)) }
            return .unreachable(error.description)
        }
        if let ledger { return .found(ClusterEvents.status(id: id, ledger: ledger)) }
        // Redis does not have it. Every shard ended, as their records on this node say: it is done.
        if let finished = finishedShards(key: key, serial: serial, cluster: cluster) { return .found(ClusterEvents.status(id: id, ledger: finished)) }
        // If Redis said it had it, it lost it.
        guard let record = try? ClusterAcceptances.records(key: key, in: store).first(where: { $0.serial == serial }), record.state != .asked,
              WallClock.milliseconds() < record.askedAt + UInt64(RedisConnection.eventRetention.milliseconds) else {
            return .unknown
        }
        if record.state == .accepted { noteLost(key: key, serial: serial, record: record, cluster: cluster) }
        return .found(ClusterEvents.lostStatus(id: id, acceptedBy: cluster.node))
    }

    /// The ledger of a cluster event every shard of which ended, as the shards' own records on
    /// this node say (each node's are replicated to every node, so they outlive a Redis that
    /// lost the event): nil while one is missing or still sending. `bodyHash`: only a serial
    /// sent with this body.
    package func finishedShards(key: String, serial: UInt32, cluster: ClusterNode, bodyHash: [UInt8]? = nil) -> EventLedgerEntry? {
        guard let records = try? store.shardSerials(eventKey: key) else { return nil }
        var splits: [Int: [Int: EventSerialRecord]] = [:]
        for record in records where record.serial == serial && (bodyHash.map { EventAdmission(serial: serial, bodyHash: $0).isSame(record) } ?? true) {
            guard let (shard, count) = ShardRecordKey.shard(of: record.eventKey) else { continue }
            splits[count, default: [:]][shard] = record
        }
        for (count, shards) in splits.sorted(by: { $0.key < $1.key }) where shards.count == count {
            let ended = (1...count).compactMap { shards[$0] }.filter { $0.phase != .sending && !$0.report.isEmpty }
            guard ended.count == count else { continue }
            let accepted = (try? ClusterAcceptances.records(key: key, in: store))?.contains { $0.serial == serial } ?? false
            return EventLedgerEntry(shards: ended.map { EventLedgerEntry.Shard(report: $0.report) }, acceptedBy: accepted ? cluster.node : "",
                                    acceptedAt: ended.map(\.startedAt).min() ?? 0)
        }
        return nil
    }

    /// An event Redis accepted and no longer has: its unsent phones were never sent. Noted in the
    /// store (GET answers `lost`), logged and counted once per node and event — counted and
    /// logged only while it could still have been sending (a finished event's record expiring
    /// from a flushed Redis lost no phone).
    package func noteLost(key: String, serial: UInt32, record: ClusterAcceptances.Record, cluster: ClusterNode) {
        // A finished event lost no phone: its shards' records say how it ended.
        guard finishedShards(key: key, serial: serial, cluster: cluster) == nil else { return }
        guard cluster.counters.lostEvents.withLock({ $0.insert(EventQueue.id(key: key, serial: serial)).inserted }) else { return }
        try? ClusterAcceptances.note(.lost, key: key, serial: serial, bodyHash: [], body: record.body, askedAt: record.askedAt, in: store)
        guard WallClock.milliseconds() < record.sendingUntil + 60_000 else { return }
        cluster.counters.eventsLost.add(1, ordering: .relaxed)
        logger.error("cluster: event '\(key)' serial \(serial) is lost: the cluster's Redis no longer has it (restarted without an append-only file, or flushed) "
                    + "while it could still be sending; phones it had not sent to got nothing. Send it again with a higher serial to reach them")
    }

    /// After Redis lost its data (its event stream vanished): every event it accepted from this
    /// node that could still be sending is looked up, and those it no longer has are noted lost.
    package func checkAcceptedEvents(cluster: ClusterNode, link: ClusterLink) {
        guard let accepted = try? ClusterAcceptances.accepted(in: store) else { return }
        let now = WallClock.milliseconds()
        for (key, record) in accepted where now < record.sendingUntil + 60_000 {
            guard let known = try? link.run({ connection throws(RedisError) in try connection.eventLedger(key: key, serial: record.serial) != nil }) else { return }
            if !known { noteLost(key: key, serial: record.serial, record: record, cluster: cluster) }
        }
    }
}

#if canImport(Glibc)
import Cluster
import DaemonConfiguration
import Glibc
#endif
import Redis
import Crypto
import Fanout
import IO
import JSONCore
import Synchronization
import TokenStore
import Vocabulary

/// The threads that send this node's share of the cluster's events. Each takes one shard at a
/// time from the stream `sokuho:events` through the consumer group, in this order:
/// 1. its own pending shards (a restarted node resumes its shards at once, under its same name);
/// 2. shards another node left pending longer than `claimAfter` (XAUTOCLAIM: that node died, or
///    lost Redis — its lease ran out, so it stopped sending);
/// 3. new shards (XREADGROUP `>`, blocking up to a second).
/// A shard is sent only under its lease (`ShardLease`); its report goes to the event's ledger
/// under the lease's fencing token, then its entry is acknowledged and deleted. A shard whose lease
/// was lost is left pending: the next holder resumes it from its checkpoint (the store's start
/// progress, shared through the registration stream), so duplicates stay within one node's
/// in-flight window.
package final class ShardWorkers: @unchecked Sendable {
    // @unchecked: `threads` is written in `init` and read in `stop` only; the rest is Sendable.
    private let cluster: ClusterNode
    private weak var service: Service?
    private let stopping = Atomic<Bool>(false)
    /// Entries a thread of this node is sending now (the node's own pending list shows them too).
    private let running = Lock<Set<StreamID>>([])
    private var threads: [OSThread] = []

    package init(service: Service, cluster: ClusterNode, count: Int = 2) {
        self.cluster = cluster
        self.service = service
        threads = (0..<count).map { _ in OSThread.start(name: "sokuho-shards") { [unowned self] in self.work() } }
    }

    /// Lets the shards under way finish (each is bounded by its event's deadline) and ends the threads.
    package func stop() {
        stopping.store(true, ordering: .relaxed)
        for thread in threads { thread.join() }
        threads = []
    }

    private func work() {
        let link = cluster.link()
        var groupReady = false
        var skipUntil: [StreamID: MonotonicInstant] = [:]
        var nextTakeover = MonotonicInstant.now()
        var nextOwnCheck = MonotonicInstant.now()
        while !stopping.load(ordering: .relaxed) {
            do throws(RedisError) {
                if !groupReady {
                    // "0": a group made after events were queued still delivers them.
                    _ = try link.run { connection throws(RedisError) in try connection.createGroup(ClusterKeys.eventGroup, on: ClusterKeys.events, startingAt: "0") }
                    groupReady = true
                }
                let now = MonotonicInstant.now()
                skipUntil = skipUntil.filter { $0.value > now }
                let busy = running.withLock { $0 }
                var next: StreamEntry?
                // Own pending shards appear at a start and after a pause; idle, a worker costs Redis
                // one blocking read a second and a takeover scan every quarter of `claimAfter`.
                if now >= nextOwnCheck {
                    let own = try link.run { connection throws(RedisError) in
                        try connection.readGroup(ClusterKeys.eventGroup, as: cluster.node, from: ClusterKeys.events, after: "0", count: 32)
                    }
                    next = own.first { !busy.contains($0.id) && skipUntil[$0.id] == nil }
                    let waiting = own.contains { !busy.contains($0.id) }
                    nextOwnCheck = waiting ? now + .milliseconds(250) : now + cluster.settings.claimAfter / 4
                }
                var takenOver = false
                if next == nil, now >= nextTakeover {
                    nextTakeover = now + cluster.settings.claimAfter / 4
                    let claimed = try link.run { connection throws(RedisError) in
                        try connection.autoClaim(on: ClusterKeys.events, group: ClusterKeys.eventGroup, for: cluster.node, minIdle: cluster.settings.claimAfter, count: 1)
                    }
                    next = claimed.entries.first
                    takenOver = next != nil
                }
                if next == nil {
                    next = try link.run { connection throws(RedisError) in
                        try connection.readGroup(ClusterKeys.eventGroup, as: cluster.node, from: ClusterKeys.events, count: 1, block: .seconds(1))
                    }.first
                }
                guard let entry = next else { continue }
                if let retry = try send(entry, link: link, takenOver: takenOver) { skipUntil[entry.id] = MonotonicInstant.now() + retry }
            } catch {
                if error.serverCode == "NOGROUP" {
                    // The stream was deleted: a Redis flushed, replaced or restarted without its
                    // data. The shards queued there are gone; the events this node offered are
                    // looked up, and those Redis no longer has are noted lost.
                    groupReady = false
                    service?.checkAcceptedEvents(cluster: cluster, link: link)
                }
                usleep(200_000)
            }
        }
    }

    /// Sends one shard. Returns when to look at the entry again if another node holds its lease.
    private func send(_ entry: StreamEntry, link: ClusterLink, takenOver: Bool) throws(RedisError) -> Duration? {
        let done = { () throws(RedisError) in
            try link.run { connection throws(RedisError) in
                _ = try connection.acknowledge([entry.id], on: ClusterKeys.events, group: ClusterKeys.eventGroup)
                _ = try connection.delete([entry.id], from: ClusterKeys.events)
            }
        }
        guard let key = entry.text("key"), let serial = entry.text("serial").flatMap(UInt32.init),
              let index = entry.text("shard").flatMap(Int.init), let count = entry.text("count").flatMap(Int.init),
              let shard = EventShard(index: index, count: count) else {
            cluster.counters.badEntries.add(1, ordering: .relaxed)
            try done()
            return nil
        }
        let name = ClusterKeys.shardLease(key, shard: index, count: count)
        // The serial is in the holder: a Redis restarted empty counts fencing tokens from 1 again, and
        // this node's lease for serial 2 must not read as serial 1's (whose keeper would extend it).
        let holder = "\(cluster.node) serial \(serial)"
        guard let lease = try link.run({ connection throws(RedisError) in try connection.acquireLease(name, holder: holder, for: cluster.settings.claimAfter) }) else {
            // Its holder is alive and extends it — most often an earlier serial of the key, which
            // stops at its next checkpoint: looked at again soon, not after a third of claimSeconds.
            return min(cluster.settings.claimAfter / 3, .milliseconds(250))
        }
        let release = { _ = try? link.run { connection throws(RedisError) in try connection.releaseLease(lease) } }
        // Redis lost an earlier serial while this shard of it was sending: its last checkpoint is
        // not here yet (it comes through the registration stream once its node stopped it).
        if service?.earlierSerialStillStopping(key: key, serial: serial, cluster: cluster, shard: shard) != nil {
            release()
            return .milliseconds(500)
        }
        running.withLock { _ = $0.insert(entry.id) }
        defer { running.withLock { _ = $0.remove(entry.id) } }
        guard let body = try link.run({ connection throws(RedisError) in try connection.eventBody(key: key, serial: serial) }),
              try link.run({ connection throws(RedisError) in try connection.claimShard(key: key, serial: serial, shard: index, node: cluster.node, fence: lease.token) }) else {
            // Done already (its node died between the report and the acknowledgement) or forgotten.
            try done()
            release()
            return nil
        }
        if takenOver { cluster.counters.takenOver.add(1, ordering: .relaxed) }
        let keeper = ShardLease(lease, entry: entry.id, duration: cluster.settings.claimAfter, cluster: cluster)
        // Stopped below before its verdict is read; this covers a Redis call throwing before that
        // (the shard is then looked at again, and the lease expires unextended).
        defer { keeper.stop() }
        let unrecorded = FirstProblem()
        // A later serial of the key was accepted before this shard began: it starts the shard's
        // phones with its own content, so this one sends nothing and ends superseded.
        let newer = try link.run { connection throws(RedisError) in try connection.newerSerial(key: key, than: serial) }
        let report = newer.map(ClusterEvents.supersededReport) ?? run(body: body, key: key, serial: serial, shard: shard, keeper: keeper,
                                                                       unrecorded: unrecorded, link: link)
        keeper.stop()
        if let lost = keeper.lostReason {
            // Not acknowledged: whoever holds the lease next resumes it from its checkpoint —
            // unless Redis lost the event itself (no ledger): then nobody will, and it is said so.
            cluster.counters.abandoned.add(1, ordering: .relaxed)
            service?.logger.warning("cluster: stopped sending shard \(shard) of '\(key)' serial \(serial): \(lost)")
            if let service, (try? link.run({ connection throws(RedisError) in try connection.eventLedger(key: key, serial: serial) != nil })) == false {
                let record = ClusterAcceptances.Record(serial: serial, state: .accepted, askedAt: WallClock.milliseconds(), body: body)
                service.noteLost(key: key, serial: serial, record: record, cluster: cluster)
                service.reseedShardProgress(key: key, serial: serial, shard: shard, fence: lease.token, cluster: cluster, link: link)
            }
            return nil
        }
        if let problem = unrecorded.value {
            // Redis missed a checkpoint (a restart, a short outage): the shard stopped before
            // sending past it. Still this node's: it is resumed here as soon as Redis answers (the
            // lease released, or run out), from the newer of this store's and Redis's checkpoints.
            cluster.counters.abandoned.add(1, ordering: .relaxed)
            service?.logger.warning("cluster: paused shard \(shard) of '\(key)' serial \(serial): \(problem)")
            release()
            service?.reseedShardProgress(key: key, serial: serial, shard: shard, fence: lease.token, cluster: cluster, link: link)
            return .milliseconds(500)
        }
        if try link.run({ connection throws(RedisError) in try connection.finishShard(key: key, serial: serial, shard: index, fence: lease.token, report: report) }) {
            cluster.counters.shardsDone.add(1, ordering: .relaxed)
            try done()
            release()
            // The lease's fencing counter serves every serial of the key, so it is never reset (a
            // stale holder of a later serial would then outrank the new one): it expires with the
            // event's records.
            _ = try? link.run { connection throws(RedisError) in try connection.expire(Lease.fenceKey(name), after: RedisConnection.eventRetention) }
            return nil
        }
        release()
        return nil
    }

    /// Runs the shard through this node's pool for its app; its report (or an error report).
    /// `unrecorded` receives the reason a checkpoint could not be recorded in Redis (the run stops then).
    private func run(body: [UInt8], key: String, serial: UInt32, shard: EventShard, keeper: ShardLease, unrecorded: FirstProblem,
                     link: ClusterLink) -> [UInt8] {
        guard let service else { return ClusterEvents.errorReport("the node was stopping") }
        var event: FanoutEvent
        do { event = try FanoutEvent(json: body) } catch { return ClusterEvents.errorReport("the event no longer parses: \(error.description)") }
        event.shard = shard
        guard let runtime = service.app(event.app, event.environment) else {
            return ClusterEvents.errorReport("app \(event.app.text) in \(event.environment.rawValue) is not configured on node \(cluster.node)")
        }
        // Resume where the shard's last holder recorded it was (nothing recorded: from the start) —
        // or from this store's own checkpoint if it is newer (this node held the shard last, and
        // Redis missed its final checkpoint).
        let recordKey = event.recordKey
        do {
            let saved = try link.run { connection throws(RedisError) in try connection.shardProgress(key: key, shard: shard.index, count: shard.count) }
            let local = try service.store.eventRecords(eventKey: recordKey).starts
            var writes: [WriteOperation] = []
            for (topic, record, segments) in saved {
                // One that does not read (damaged, or written by a newer sokuho during an upgrade)
                // ends the shard with the reason: resuming it from scratch would start again every
                // phone the checkpoint says got its start.
                let progress: StartProgress
                do {
                    progress = try StartProgress(eventKey: recordKey, topic: topic, recordBytes: record).merging(segments: segments.map {
                        (segment) throws(StoreError) in
                        (segment.number, try AnswerLog.decode(segment.bytes, what: "answer segment \(segment.number) of topic '\(topic)'"))
                    })
                } catch {
                    return ClusterEvents.errorReport("the shard's checkpoint of topic '\(topic)' could not be read (\(error.description)); "
                                                     + "the shard is not resumed: from scratch it would start its phones twice")
                }
                if let own = local.first(where: { $0.topic == topic }), own.updatedAt >= progress.updatedAt { continue }
                writes.append(.putStartProgress(progress.foldedIntoOneSegment))
            }
            try service.store.write(writes)
        } catch {
            return ClusterEvents.errorReport("the shard's checkpoints could not be read: \(error)")
        }
        var options = runtime.fanout
        options.urgent = event.kind == .start
        options.journal = ShardJournal(keeper: keeper, link: link, key: key, serial: serial, shard: shard, unrecorded: unrecorded)
        let shardFields: [DaemonLog.Field] = [("shard", .text(shard.description)), ("node", .text(cluster.node))]
        var entry = EventQueue.Entry(id: EventQueue.id(key: event.recordKey, serial: event.serial), event: event, app: runtime, urgent: options.urgent)
        do {
            let result = try Fanout.run(event, store: service.store, options: options)
            entry.state = result.report.stopped == nil ? .done : .stopped
            entry.report = result.report
            service.metrics.eventFinished(entry, result)
            service.logEnded(entry, extra: shardFields)
            return result.report.json
        } catch {
            entry.state = .failed
            entry.error = error.message
            service.logEnded(entry, extra: shardFields)
            return ClusterEvents.errorReport(error.message)
        }
    }
}

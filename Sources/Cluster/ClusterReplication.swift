#if canImport(Glibc)
import DaemonConfiguration
import Glibc
#endif
import Redis
import IO
import JSONCore
import Synchronization
import Vocabulary
import TokenStore

/// Registration replication (issue 15): every node publishes its store changes to the stream
/// `sokuho:registrations` and applies the other nodes' changes to its own LMDB store, which stays
/// the local view the fan-out reads. Two threads, each with its own Redis connection:
///
/// - the **publisher** reads the store's outbox (written in the same transaction as each local
///   change, `TokenStore.replicate`) in order, XADDs one entry per outbox record
///   (`node`, `store`, `ops`; `MAXLEN ~ registrationStreamLength`), then deletes what the stream
///   took. Redis down: the outbox grows and is published once Redis is back; a crash between the
///   XADD and the delete publishes a record twice (applying a change twice is the same change).
/// - the **applier** reads the stream with XREAD from the applied id the store holds, skips the
///   entries its own store published (`store` is its replica identity), applies the rest and
///   stores the id of the last entry read in the same transaction (after a batch of only its own
///   entries at most once a second, and when the stream goes quiet). Entries that do not decode are
///   skipped whole and counted. It checks for a gap (entries trimmed before it read them) at its
///   start, after every Redis failure and every 30 s: a node behind says so and continues.
package final class RegistrationReplication: Sendable {
    package let node: ClusterNode
    package let stores: StoreHolder
    private let logger: Lock<@Sendable (LogLevel, String) -> Void> = Lock({ _, _ in })
    private let threads = Lock<[PeriodicThread]>([])
    /// The applier's place in the stream for the store of that identity (nil: not read from the
    /// store yet; a standby's swapped-in store is another replica) and when it last looked for a gap.
    private let reader = Lock<(identity: String?, position: StreamID?, checkedAt: MonotonicInstant?)>((nil, nil, nil))
    /// The position the applier last stored in the store, and when (see `applyStream`).
    private let stored = Lock<(position: StreamID?, at: MonotonicInstant?)>((nil, nil))

    /// Outbox records published, stream entries applied (other nodes'), own entries skipped,
    /// entries refused as undecodable: for `/metrics`.
    package let published = Atomic<Int>(0)
    package let applied = Atomic<Int>(0)
    package let skippedOwn = Atomic<Int>(0)
    package let badEntries = Atomic<Int>(0)

    /// How often the applier looks for a gap while Redis stays reachable: trimming can overtake a
    /// node that reads slower than others write.
    package static let gapCheckInterval: Duration = .seconds(30)
    /// Entries per XREAD, and how long one waits for new ones (also how long `stop` may wait).
    package static let readCount = 256
    package static let readBlock: Duration = .milliseconds(500)

    /// Switches the store's outbox on at once: every local change from here on is published,
    /// including those of events a previous run left unfinished, which resume before `start`.
    package init(node: ClusterNode, stores: StoreHolder) throws(StoreError) {
        self.node = node
        self.stores = stores
        _ = try stores.current.replicate()
    }

    private func log(_ level: LogLevel, _ line: String) { logger.withLock { $0 }(level, line) }

    /// Starts the publisher and the applier; `log` takes their messages (stderr under `sokuho serve`).
    package func start(log: @escaping @Sendable (LogLevel, String) -> Void) {
        logger.withLock { $0 = log }
        let publisherLink = ThreadLink(node.link()), applierLink = ThreadLink(node.link())
        let publisher = PeriodicThread(name: "sokuho-publish", interval: .milliseconds(20)) { [self] stopping in
            publishOutbox(publisherLink.link, stopping: stopping)
        }
        let applier = PeriodicThread(name: "sokuho-apply", interval: .milliseconds(1)) { [self] stopping in
            applyStream(applierLink.link, stopping: stopping)
        }
        threads.withLock { $0 = [publisher, applier] }
    }

    /// Stops both threads (each finishes its round: at most one XREAD block or one outbox batch).
    package func stop() {
        for thread in threads.withLock({ threads -> [PeriodicThread] in defer { threads = [] }; return threads }) { thread.stop() }
    }

    // MARK: Publishing

    /// Publishes the outbox until it is empty, Redis fails or `stop` is called.
    private func publishOutbox(_ link: ClusterLink, stopping: () -> Bool) {
        while !stopping() {
            let store = stores.current
            let identity: String
            let records: [OutboxRecord]
            do {
                identity = try store.replicate() // a standby's swapped-in store is switched on here
                records = try store.outbox(limit: 64)
            } catch {
                log(.error, "cluster: cannot read the replication outbox: \(error.description)")
                pause(.seconds(1), stopping: stopping)
                return
            }
            if records.isEmpty { return }
            var last: UInt64?
            var failure: RedisError?
            for record in records {
                do throws(RedisError) {
                    let fields = [StreamEntry.Field("node", node.node), StreamEntry.Field("store", identity), StreamEntry.Field("ops", record.operations)]
                    _ = try link.run { (redis) throws(RedisError) in
                        try redis.add(to: ClusterKeys.registrations, fields, maxLength: node.settings.registrationStreamLength)
                    }
                    last = record.sequence
                    published.add(1, ordering: .relaxed)
                } catch {
                    failure = error
                    break
                }
            }
            if let last {
                do { try store.removeFromOutbox(through: last) } catch {
                    log(.warning, "cluster: cannot remove published records from the outbox (they will be published again): \(error.description)")
                    pause(.seconds(1), stopping: stopping) // not again and again at once
                    return
                }
            }
            if failure != nil {
                // ClusterHealth has the error for /readyz and /metrics; the link backs off its reconnects.
                pause(.milliseconds(250), stopping: stopping)
                return
            }
        }
    }

    // MARK: Applying

    /// One XREAD of the stream after the applied id, applied to the store.
    private func applyStream(_ link: ClusterLink, stopping: () -> Bool) {
        let store = stores.current
        do {
            let identity = try store.replicate()
            var (known, position, checkedAt) = reader.withLock { $0 }
            if known != identity {
                (position, checkedAt) = (nil, nil)
                reader.withLock { $0 = (identity, nil, nil) }
            }
            if position == nil {
                let text = try store.replicationStatus().applied
                let loaded = text.flatMap(StreamID.init) ?? .zero
                if let text, StreamID(text) == nil {
                    log(.warning, "cluster: the store's applied stream id '\(text)' is not a stream id; reading the registration stream from its start")
                }
                position = loaded
                reader.withLock { $0.position = loaded }
                stored.withLock { $0 = (loaded, nil) }
            }
            guard var after = position else { return }
            var behind: String?
            if checkedAt == nil || MonotonicInstant.now() - checkedAt! >= Self.gapCheckInterval {
                let head = try link.run { (redis) throws(RedisError) in try redis.head(of: ClusterKeys.registrations) }
                behind = head.flatMap { Self.gap(after: after, head: $0) }
                checkedAt = MonotonicInstant.now()
                reader.withLock { $0.checkedAt = checkedAt }
                if let behind, try store.replicationStatus().behind == nil {
                    log(.error, "cluster: node \(node.node) is behind: \(behind). Its store misses those changes; take a backup on a peer (sokuho store backup) and restore it here (sokuho store restore --replace), which carries the peer's applied id")
                }
            }
            let entries = try link.run { (redis) throws(RedisError) in
                try redis.read(from: ClusterKeys.registrations, after: after, count: Self.readCount, block: Self.readBlock)
            }
            guard let last = entries.last else {
                // Idle: the position a batch of own entries left unstored goes to the store now,
                // so a backup taken in a quiet moment carries the id this node really reached.
                if behind != nil || stored.withLock({ $0.position }) != after {
                    try store.applyFromStream([], through: after.description, behind: behind)
                    stored.withLock { $0 = (after, MonotonicInstant.now()) }
                }
                return
            }
            var operations: [WriteOperation] = []
            var othersRead = false
            for entry in entries {
                if entry.text("store") == identity {
                    skippedOwn.add(1, ordering: .relaxed)
                    continue
                }
                othersRead = true
                do throws(StoreError) {
                    guard let bytes = entry["ops"], entry.text("store") != nil else {
                        throw StoreError.invalid("the entry has no 'store' or 'ops' field")
                    }
                    operations += try ReplicatedWrite.decode(bytes)
                    applied.add(1, ordering: .relaxed)
                } catch {
                    badEntries.add(1, ordering: .relaxed)
                    log(.warning, "cluster: registration stream entry \(entry.id) from node '\(entry.text("node") ?? "?")' skipped: \(error.description)")
                }
            }
            // A batch of only this node's own entries changes nothing here: its id is stored at
            // most once a second (and when the stream goes quiet), so the node publishing the most
            // does not also pay a write transaction per read for it. Losing the newer id to a stop
            // only means reading (and skipping) those entries again.
            let now = MonotonicInstant.now()
            if othersRead || behind != nil || stored.withLock({ $0.at.map { now - $0 >= .seconds(1) } ?? true }) {
                try store.applyFromStream(operations, through: last.id.description, behind: behind)
                stored.withLock { $0 = (last.id, now) }
            }
            after = last.id
            reader.withLock { $0.position = after }
        } catch let error as RedisError {
            _ = error // ClusterHealth has it; a gap may have opened while Redis was away: look again.
            reader.withLock { $0.checkedAt = nil }
            pause(.milliseconds(250), stopping: stopping)
        } catch {
            log(.error, "cluster: cannot apply the registration stream: \(error)")
            pause(.seconds(1), stopping: stopping)
        }
    }

    /// What the node at `after` missed, or nil when it missed nothing. Trimming (XADD MAXLEN ~)
    /// removes the oldest entries, whole blocks at a time; Redis does not record their ids (its
    /// max-deleted-entry-id covers XDEL only), so: entries were trimmed from this stream
    /// (entries-added above its length) and the oldest left is past the node's last one. A node
    /// with nothing applied is behind as soon as anything was trimmed. Read as the whole truth
    /// only within this approximation: a node whose very last entry went in a trim together with
    /// none of its successors counts as behind, which with blocks of ~100 entries it would be anyway.
    package static func gap(after: StreamID, head: StreamHead) -> String? {
        let first = head.firstEntry ?? head.lastGenerated
        guard let added = head.entriesAdded, added > head.length, first > after else {
            return nil
        }
        let trimmed = added - head.length
        return after == .zero
            ? "\(trimmed) entries were trimmed from \(ClusterKeys.registrations) before this node read any (the oldest left is \(first))"
            : "entries after \(after), the last this node applied, were trimmed from \(ClusterKeys.registrations) (the oldest left is \(first))"
    }

    /// Sleeps up to `duration` in short steps, returning early when told to stop.
    private func pause(_ duration: Duration, stopping: () -> Bool) {
        let deadline = MonotonicInstant.now() + duration
        while !stopping(), MonotonicInstant.now() < deadline { sleepBriefly() }
    }

    private func sleepBriefly() {
        var request = timespec(tv_sec: 0, tv_nsec: 20_000_000)
        // Its only failure is EINTR, which makes this step of the pause shorter: harmless.
        _ = nanosleep(&request, nil)
    }
}

extension RegistrationReplication {
    /// The `cluster` member of `/readyz`.
    package func readiness(into writer: inout JSONWriter) {
        let status = try? stores.current.replicationStatus()
        writer.beginObject()
        writer.key("node"); writer.string(node.node)
        writer.key("connected"); writer.bool(node.health.connected)
        // Degraded: events submitted here run on this node alone (`ClusterEvents`).
        writer.key("degraded"); writer.bool(!node.health.connected)
        writer.key("problem"); if let problem = node.health.problem { writer.string(problem) } else { writer.null() }
        writer.key("outbox"); writer.int(status?.outbox ?? 0)
        writer.key("applied"); if let applied = status?.applied { writer.string(applied) } else { writer.null() }
        writer.key("behind"); if let behind = status?.behind { writer.string(behind) } else { writer.null() }
        writer.key("appendOnly"); if let persistence = node.health.persistence { writer.bool(persistence.appendOnly) } else { writer.null() }
        writer.key("warning"); if let warning = node.health.persistenceProblem { writer.string(warning) } else { writer.null() }
        writer.endObject()
    }
}

/// A link handed to the one thread that uses it (ClusterLink is a thread's own connection, not
/// Sendable); nothing else touches it after `start`.
private final class ThreadLink: @unchecked Sendable {
    package let link: ClusterLink
    package init(_ link: ClusterLink) { self.link = link }
}

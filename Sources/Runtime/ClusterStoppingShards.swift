#if canImport(Glibc)
import Glibc
#endif
import Cluster
import Fanout
import IO
import Redis
import TokenStore
import Vocabulary

extension Service {
    /// A shard of an earlier serial of `key` that may still be sending on some node although the
    /// cluster's Redis no longer knows its serial (restarted empty, or flushed): its record on this
    /// node still says `sending`. Its node stops it within two thirds of `claimAfter` of losing its
    /// lease, and its final record and checkpoint then reach every node through the registration
    /// stream (after both links' reconnects, which back off up to 5 s: on a loaded machine a
    /// window after the last checkpoint was not enough). A later serial accepted before that would
    /// start again the phones it is still sending (issue 33: 257 of 1,116 in a test). A record
    /// that has not moved (serial record or start checkpoint) for `claimAfter` and 15 s is taken to
    /// be a node that died with it: what it had in flight is unknown either way. While Redis still
    /// knows the serial, the key's shard leases keep the serials apart and nothing waits here.
    /// `shard`: only that shard's records (a shard worker about to run it: the node that ran the
    /// earlier serial's shard may not have its last checkpoint here yet either). Nil: nothing of
    /// the key is stopping. Redis that cannot be asked counts as not knowing the serial.
    func earlierSerialStillStopping(key: String, serial: UInt32, cluster: ClusterNode, shard: EventShard? = nil) -> (serial: UInt32, shard: String)? {
        guard let records = try? store.shardSerials(eventKey: key) else { return nil }
        let now = WallClock.milliseconds()
        let window = UInt64((cluster.settings.claimAfter + .seconds(15)).milliseconds)
        var knownToRedis: [UInt32: Bool] = [:]
        let admission = EventAdmission(serial: serial, bodyHash: [])
        for record in records where admission.supersedes(record) && record.phase != .done {
            let split = ShardRecordKey.shard(of: record.eventKey)
            if let shard, split?.shard != shard.index + 1 || split?.count != shard.count { continue }
            // Stopped: its last checkpoint is where its node left it. Unfinished passes' checkpoints
            // are not replicated, only kept in Redis: a shard worker waits until its node has
            // written them to Redis again (`reseedShardProgress`), unless Redis has some already.
            if record.phase == .stopped {
                guard let shard else { continue }
                let empty = (try? cluster.read { connection throws(RedisError) in
                    try connection.shardProgress(key: key, shard: shard.index, count: shard.count).isEmpty
                }) ?? true
                if !empty { continue }
            }
            let checkpoints = (try? store.eventRecords(eventKey: record.eventKey).starts) ?? []
            let moved = max(record.updatedAt, checkpoints.map(\.updatedAt).max() ?? 0)
            guard now < moved + window else { continue }
            if knownToRedis[record.serial] == nil {
                knownToRedis[record.serial] = (try? cluster.read { connection throws(RedisError) in
                    try connection.eventLedger(key: key, serial: record.serial) != nil
                }) ?? false
            }
            if knownToRedis[record.serial] == true { continue }
            return (record.serial, split.map { "\($0.shard)/\($0.count)" } ?? record.eventKey)
        }
        return nil
    }

    /// Redis lost `key` while this node sent shard `shard` of serial `serial` (the shard stopped
    /// with a checkpoint it could not record): this node's checkpoints of the shard are the only
    /// ones left — unfinished passes' checkpoints are kept in Redis, not replicated — so they are
    /// written to Redis again, and the key's next serial resumes the shard from them on whichever
    /// node takes it (a worker there waits for them: `earlierSerialStillStopping`). Tried until
    /// Redis answers, for at most `claimAfter`; nothing when Redis still has the serial (a short
    /// outage: the shard resumes from its own checkpoints).
    func reseedShardProgress(key: String, serial: UInt32, shard: EventShard, fence: Int64, cluster: ClusterNode, link: ClusterLink) {
        guard let starts = try? store.eventRecords(eventKey: shard.recordKey(key)).starts, !starts.isEmpty else { return }
        let until = MonotonicInstant.now() + cluster.settings.claimAfter
        while MonotonicInstant.now() < until {
            do throws(RedisError) {
                guard try link.run({ connection throws(RedisError) in try connection.eventLedger(key: key, serial: serial) == nil }) else { return }
                for progress in starts {
                    var whole = progress
                    whole.answerLog = nil  // the record holds every answer
                    _ = try link.run { connection throws(RedisError) in
                        try connection.saveShardProgress(key: key, serial: serial, shard: shard.index, count: shard.count, fence: fence,
                                                         topic: whole.topic, record: whole.recordBytes)
                    }
                }
                logger.info("cluster: wrote this node's checkpoints of shard \(shard) of '\(key)' serial \(serial) to Redis again, which had lost them")
                return
            } catch {
                usleep(250_000)
            }
        }
    }
}

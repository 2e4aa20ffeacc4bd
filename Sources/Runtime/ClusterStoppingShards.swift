import Cluster
import Fanout
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
        for record in records where admission.supersedes(record) && record.phase == .sending {
            let split = ShardRecordKey.shard(of: record.eventKey)
            if let shard, split?.shard != shard.index + 1 || split?.count != shard.count { continue }
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
}

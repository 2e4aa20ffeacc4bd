import Cluster
import Fanout
import Redis
import TokenStore
import Vocabulary

extension Service {
    /// A shard of an earlier serial of `key` that may still be sending on some node although the
    /// cluster's Redis no longer knows its serial (restarted empty, or flushed): its records on
    /// this node say `sending` and moved (its serial record or a start checkpoint, replicated from
    /// whichever node runs it) within the last `claimAfter` and two seconds. Its node stops it
    /// within two thirds of `claimAfter` of losing its lease, and its final checkpoint then reaches
    /// every node through the registration stream; a later serial accepted before that would start
    /// again the phones it is still sending (issue 33: 257 of 1,116 in a test). While Redis still
    /// knows the serial, the key's shard leases keep the serials apart and nothing waits here.
    /// Nil: nothing of the key is stopping, or Redis cannot be asked (the accept fails then anyway).
    func earlierSerialStillStopping(key: String, serial: UInt32, cluster: ClusterNode) -> (serial: UInt32, shard: String)? {
        guard let records = try? store.shardSerials(eventKey: key) else { return nil }
        let now = WallClock.milliseconds()
        let window = UInt64((cluster.settings.claimAfter + .seconds(2)).milliseconds)
        var knownToRedis: [UInt32: Bool] = [:]
        let admission = EventAdmission(serial: serial, bodyHash: [])
        for record in records where admission.supersedes(record) && record.phase == .sending {
            let checkpoints = (try? store.eventRecords(eventKey: record.eventKey).starts) ?? []
            let moved = max(record.updatedAt, checkpoints.map(\.updatedAt).max() ?? 0)
            guard now < moved + window else { continue }
            if knownToRedis[record.serial] == nil {
                knownToRedis[record.serial] = (try? cluster.read { connection throws(RedisError) in
                    try connection.eventLedger(key: key, serial: record.serial) != nil
                }) ?? true
            }
            if knownToRedis[record.serial] == true { continue }
            let shard = ShardRecordKey.shard(of: record.eventKey).map { "\($0.shard)/\($0.count)" } ?? record.eventKey
            return (record.serial, shard)
        }
        return nil
    }
}

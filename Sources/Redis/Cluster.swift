// Cluster — several `sokuho serve` nodes sharing registrations and events through Valkey/Redis
// Streams (issue 15; the README's "Cluster" says what a user gets). This module is the Redis side:
// a small typed client on hiredis and the atomic scripts the nodes agree through. The daemon's side
// (threads, links, what runs when) is in Sources/Cluster and Runtime's ClusterEvents.swift and
// ShardWorkers.swift; the store's side of replication in TokenStore's StoreReplication.swift and
// ReplicatedWrite.swift.
//
// - Registrations: every node appends its store changes to the stream `sokuho:registrations`
//   (XADD, MAXLEN ~ trimming) from an outbox the store writes in the same transaction as each
//   change, and applies the others' entries to its own LMDB store by reading the stream with XREAD
//   from the last id it applied — kept in the store, written in the same transaction as the changes
//   it applied. A node whose id was trimmed away says it is behind (fixed with a peer's backup).
//   Entries carry the operations (ReplicatedWrite), the origin node and the origin store's replica
//   identity, by which a node skips its own.
// - Events: `acceptEvent` checks key and serial against every serial the cluster accepted and queues
//   one entry per shard on `ClusterKeys.events`, in one script. Nodes read the stream through the
//   consumer group `ClusterKeys.eventGroup`; a shard is sent under a lease (`Lease.swift`) whose
//   fencing token guards the shard's owner, report and checkpoints (`EventLedger.swift`); a node
//   that died leaves its entries pending, and XAUTOCLAIM hands them to another after `claimAfter`.
// - Leases: `sokuho:lease:<name>` (SET NX PX through an atomic script), each acquisition with a
//   fencing token from INCR on `sokuho:lease:<name>:fence`, which only grows.
// - Failures: every error is a RedisError; `needsReconnect` ones mean the connection must be made
//   again (a write sent just before may or may not have been applied: the writes are idempotent or
//   fenced for that). Requires Redis ≥ 6.2 or Valkey (XAUTOCLAIM); tests use Debian's redis-server 7.0.
//
// Files: RedisConnection (connect, AUTH, timeouts, send/command, reconnect), RedisReply (replies
// and RedisError), Streams (XADD, XREAD, XINFO STREAM, XGROUP CREATE, XREADGROUP, XACK, XAUTOCLAIM,
// XCLAIM, XDEL, XRANGE, XLEN, XPENDING), Lease (leases; SET/GET/INCR/DEL/EVAL), EventLedger
// (events, shards, checkpoints), Hiredis (the checked wrappers: every hiredis
// pointer stays in this module and every reply is freed there).

/// The key names the cluster shares, in one place (see the plan above).
public enum ClusterKeys {
    /// The stream of registration changes every node applies.
    public static let registrations = "sokuho:registrations"
    /// The consumer group reading the event shards.
    public static let eventGroup = "sokuho"
    /// The stream of event shards waiting for a node: one entry per shard, read through the
    /// consumer group `eventGroup`, acknowledged and deleted once the shard is done.
    public static let events = "sokuho:events"
    /// Hash per event key: the serials accepted (`s<serial>` → body hash) and the highest (`max`):
    /// the cluster-wide dedup by key and serial.
    public static func eventSerials(_ eventKey: String) -> String { "sokuho:serials:" + eventKey }
    /// Hash per event serial: its body, shard count, and each shard's owner, fencing token and report.
    public static func eventShards(_ eventKey: String, serial: UInt32) -> String { "sokuho:shards:\(eventKey)/\(serial)" }
    /// The lease a node holds while it sends a shard: one per event key and shard, whatever the
    /// serial, so two serials of a key never send the same phones at once (a later serial's shard
    /// waits for the earlier one's to stop, then resumes from its checkpoint). Its fencing counter
    /// outlives any one serial (it expires with the event's records, never reset).
    public static func shardLease(_ eventKey: String, shard: Int, count: Int) -> String { "keyshard:\(eventKey)/\(shard)/\(count)" }
}

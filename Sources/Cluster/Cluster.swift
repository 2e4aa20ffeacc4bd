// Cluster — several `sokuho serve` nodes sharing registrations and events through Valkey/Redis
// Streams (issue 15). This part is the foundation only: a small typed client on hiredis
// (RedisConnection: streams, consumer groups, leases); nothing in the daemon uses it yet.
//
// THE PLAN for the later parts (not built yet; names are the ones they will use):
//
// - Optional. With no `cluster` section in the configuration nothing changes and nothing connects.
//   Each node has its own connection(s), one per thread that talks to Redis (blocking hiredis).
// - Registrations: every node appends each registration change it accepts to the stream
//   `sokuho:registrations` (XADD, MAXLEN ~ trimming) and applies the others' entries to its own
//   LMDB store by reading the stream with XRANGE from the last id it applied. That id is kept in the
//   LMDB store, written in the same transaction as the changes it applied, so a restarted node
//   resumes exactly there; a node whose id was trimmed away takes a full copy first (backup/restore).
//   Entries carry the registration as JSON and the origin node, so a node skips its own.
// - Events: an accepted event goes to one of N shard streams (`sokuho:events:<shard>`), read through
//   the consumer group `sokuho` with XREADGROUP (COUNT, BLOCK); a node XACKs an event once its
//   fan-out is done. A node that dies leaves its events pending: the others XAUTOCLAIM entries idle
//   longer than the claim time and finish them (fan-out checkpoints make a second run resume, not
//   repeat). XPENDING's summary feeds /status.
// - Leases: `sokuho:lease:<name>` (SET NX PX through an atomic script) for work one node at a time
//   must do (pruning, a shard's ownership). Each acquisition gets a fencing token from INCR on
//   `sokuho:lease:<name>:fence`; writes done under a lease carry the token and are refused when a
//   higher one has been seen, so a paused old holder cannot overwrite the new one's work. Holders
//   extend well before expiry and stop at the first failed extend.
// - Failures: every error is a RedisError; `isRetryable` ones (a lost connection, a restarting
//   server) mean reconnect with backoff and retry — the writes above are idempotent for that.
//   Requires Redis ≥ 6.2 or Valkey (XAUTOCLAIM); tests use Debian's redis-server 7.0.
//
// Files: RedisConnection (connect, AUTH, timeouts, send/command, reconnect), RedisReply (replies
// and RedisError), Streams (XADD, XGROUP CREATE, XREADGROUP, XACK, XAUTOCLAIM, XRANGE, XLEN,
// XPENDING), Lease (leases, SET/GET/INCR/DEL/EVAL), Hiredis (the checked wrappers: every hiredis
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
    /// The lease a node holds while it sends a shard.
    public static func shardLease(_ eventKey: String, serial: UInt32, shard: Int) -> String { "shard:\(eventKey)/\(serial)/\(shard)" }
}

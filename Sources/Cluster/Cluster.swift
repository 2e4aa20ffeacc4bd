// Cluster — several `sokuho serve` nodes sharing registrations and events through Valkey/Redis
// Streams (issue 15). This module is the client: a small typed client on hiredis (RedisConnection:
// streams, consumer groups, leases). Registration replication is built on it (Daemon's
// ClusterReplication.swift, TokenStore's StoreReplication.swift); events come next.
//
// THE PLAN for the later parts (not built yet; names are the ones they will use):
//
// - Optional. With no `cluster` section in the configuration nothing changes and nothing connects.
//   Each node has its own connection(s), one per thread that talks to Redis (blocking hiredis).
// - Registrations (BUILT): every node appends its store changes to the stream
//   `sokuho:registrations` (XADD, MAXLEN ~ trimming) from an outbox the store writes in the same
//   transaction as each change, and applies the others' entries to its own LMDB store by reading
//   the stream with XREAD from the last id it applied. That id is kept in the LMDB store, written
//   in the same transaction as the changes it applied, so a restarted node resumes exactly there;
//   a node whose id was trimmed away says it is behind and is fixed with a peer's backup. Entries
//   carry the operations in a binary codec (TokenStore's ReplicatedWrite), the origin node and the
//   origin store's replica identity, by which a node skips its own. See the README's "Cluster".
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
// and RedisError), Streams (XADD, XREAD, XINFO STREAM, XGROUP CREATE, XREADGROUP, XACK, XAUTOCLAIM,
// XRANGE, XLEN, XPENDING), Lease (leases, SET/GET/INCR/DEL/EVAL), Hiredis (the checked wrappers: every hiredis
// pointer stays in this module and every reply is freed there).

/// The key names the cluster shares, in one place (see the plan above).
public enum ClusterKeys {
    /// The stream of registration changes every node applies.
    public static let registrations = "sokuho:registrations"
    /// The consumer group reading the event shards.
    public static let eventGroup = "sokuho"
    /// Event shard `index`'s stream.
    public static func events(shard index: Int) -> String { "sokuho:events:\(index)" }
}

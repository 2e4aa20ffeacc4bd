// Redis — the hiredis client the cluster runs on (Valkey/Redis Streams).
// - `RedisConnection`: a blocking client per thread (connect and command timeouts, optional AUTH,
//   `reconnect()`) with typed commands: XADD with MAXLEN ~, XREAD, XINFO STREAM (`head`: what
//   trimming removed), XGROUP CREATE MKSTREAM (BUSYGROUP tolerated), XREADGROUP, XACK, XAUTOCLAIM,
//   XCLAIM JUSTID, XDEL, XRANGE, XLEN, XPENDING, SET NX PX/GET/INCR/DEL/EVAL.
// - Lease.swift: leases with fencing tokens. EventLedger.swift: the event ledger — accept with
//   cluster-wide dedup, a shard's owner, report and checkpoints, all fenced, as atomic Lua scripts.
// - Replies are `RedisReply` values, failures `RedisError` (`isRetryable`, `needsReconnect`).
// hiredis pointers stay inside; return codes go through `Hiredis.check`/`context`/`reply`.

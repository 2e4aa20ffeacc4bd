// Runtime — the daemon at run time, nothing about HTTP.
// - `Service`: the store behind a `StoreHolder`, one warm `AppRuntime` per app (its pool, provider
//   tokens and kept channel-host connection), the event queue, the credential checks, standby and
//   promotion, reload on SIGHUP.
// - `EventQueue`: accepted events, an urgent worker for starts.
// - `ServiceMetrics` + `PrometheusText`; `TokenStatisticsCache` (token counts counted once at a
//   time, off the API thread); `RateLimiter`; `ClockStatus` (adjtimex); `SystemdNotify`.
// - The cluster's events: `ClusterEvents` (submission to the ledger) and `ShardWorkers` (the
//   threads that take shards).

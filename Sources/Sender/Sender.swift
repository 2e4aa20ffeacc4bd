// Sender — the fan-out engine and the connection rules of APNs and FCM (README, "What happens to
// every push").
// - `ConnectionPool`: loop threads that own their connections, bounded per-loop queues with
//   backpressure; producers and waiters block on a condition the loops announce on, never a sleep.
//   `+Requests`: `submit`/`perform`, a few requests with a fixed path (broadcasts, channel
//   management; GET and DELETE too) on any pool, each answered with outcome, status, reason,
//   `apns-*` headers and body — `submit` calls back and never waits (the API's channel routes),
//   `perform` waits; the static `perform` opens a one-connection pool for `send` and `channels`.
// - `HandOutGate`: per pool, what every run on it may have handed out and not recorded as answered
//   (the wire plus one batch): the bound on what a crash leaves unknown.
// - `LoopSender`: one stream until a push succeeds, provider-token generation per connection
//   presented at submit, liveness settings, which response headers are kept; `+Connections`:
//   reconnects, per-connection fail-fast, clock diagnosis; `+Outcomes`: retries, resends, final
//   outcomes.
// - `PushGroup` (body and headers shared by a group, an optional deadline; whole answers kept only
//   when it asks, `keepsAnswer`, so device pushes pay nothing), `PushJob` (token bytes inline + group
//   reference), `PushOutcome` (exactly one per push), `LatencyHistogram`.
// - `RetryPolicy`: pure — back-off with jitter, Retry-After, resends, halt.
// - FCM: `PushProvider`, `FCMAccessTokenSource` (refreshes the service account's access token off
//   the loops), `LoopSender+FCM`, `RetryPolicy+FCM`; a 429 pauses the whole pool.

// DaemonConfiguration — `sokuho serve`'s configuration (README, "Daemon configuration").
// - `ServeConfiguration`; `ServeSetting.all`, the one table of file members, flags and variables
//   (the options, their help and the README's override table follow it).
// - Reading through JSONCore's strict reader; the checks at start; the `--check-config` summary.
// - `SecretFile` (the admin token, the Redis password); `ServiceError` (why a start or reload was
//   refused, naming the field).

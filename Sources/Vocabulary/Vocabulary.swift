// Vocabulary — below every other module, Glibc only: what they all spell the same way, each defined
// once (Tests/SourceRuleTests fails on a second copy).
// - `Hex`: the one digit table — tokens in `:path` and token files, digests, JSON's `\u00XX`, the
//   API's `%XX`; allocation-free pointer forms for the per-push path.
// - `WallClock`: the one `CLOCK_REALTIME` read (records, expirations, JWT times); durations use IO's
//   `MonotonicInstant`.
// - `UUIDText`: the one 8-4-4-4-12 formatter and parser; randomness stays with each caller.
// - `DeviceToken`: the one token type, up to 255 bytes inline (an FCM registration token's bound, so
//   Android needs no second type), with every length bound written beside it: APNs' 1...100, the
//   store's 8...100, the simulator's 32-byte minimum, FCM's 1...255. APNs adds its hex parser and
//   `:path`.
// - `Lock`: the one lock around shared state (`Synchronization.Mutex`, made visible to
//   ThreadSanitizer in Toolchain/tsan's build).

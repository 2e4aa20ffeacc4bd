// IO — the runtime floor, no TLS and no HTTP.
// - `EventLoop`: one epoll loop per thread that sleeps until its earliest `LoopTimer` (a timer heap:
//   deadlines, PINGs, back-off; no periodic tick); registration ids in epoll data, so a reused
//   descriptor never reaches the wrong source; loop-thread assertions in debug builds.
// - `Syscall`: every system call, checked, EINTR retried; `Syscall.expect` for the calls whose
//   failure leaves nothing to act on (`close`, `usleep`), with the errnos each tolerates. errno is
//   checked only here (Tests/SourceRuleTests).
// - `FileDescriptor` (`~Copyable`, closed exactly once); `OSThread`.
// - Name resolution off the loop (`NameResolution`) and Happy Eyeballs `ConnectAttempt`s.
// - `MonotonicInstant` (time is `Duration` everywhere else); `ConditionLock` for the control plane
//   and the token store's queue.

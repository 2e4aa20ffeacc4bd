import Fanout
import IO
import TokenStore

/// Whether an app's credentials still work, found out in the quiet weeks rather than at the
/// earthquake: a revoked key, a team's lapsed membership or a switched-off broadcast capability
/// show as a refused channel listing long before the first warning needs them. Listing the app's
/// channels (`GET …/all-channels` on the channel host) needs a valid provider token and the
/// broadcast capability, and sends nothing to any phone.
struct CredentialCheck: Sendable {
    var ok: Bool
    /// Wall-clock seconds since 1970 when the answer came.
    var checkedAt: Int64
    /// Why it failed (APNs' status and reason, or why no answer came); nil when it passed.
    var message: String?

    static func run(_ runtime: AppRuntime) -> CredentialCheck {
        let result: CredentialCheck
        do {
            _ = try runtime.channels.list()
            result = CredentialCheck(ok: true, checkedAt: now(), message: nil)
        } catch {
            result = CredentialCheck(ok: false, checkedAt: now(), message: error.message)
        }
        runtime.credentialCheck.withLock { $0 = result }
        return result
    }

    private static func now() -> Int64 { Int64(TokenLineParser.realtimeMilliseconds() / 1000) }
}

/// The thread that checks every app's credentials at start and then every `interval`.
final class CredentialChecker: @unchecked Sendable {
    // @unchecked: `stopping` is guarded by `lock`; `thread` is written once before anyone joins.
    private let lock = ConditionLock()
    private var stopping = false
    private var thread: OSThread?

    init(interval: Duration, apps: @escaping @Sendable () -> [AppRuntime]) {
        thread = OSThread.start(name: "sokuho-creds") { [unowned self] in
            repeat {
                for runtime in apps() {
                    if lock.withLock({ stopping }) { return }
                    _ = CredentialCheck.run(runtime)
                }
            } while waitOrStop(interval)
        }
    }

    /// Waits `interval`; false when told to stop meanwhile.
    private func waitOrStop(_ interval: Duration) -> Bool {
        let deadline = MonotonicInstant.now() + interval
        return lock.withLock {
            while !stopping, MonotonicInstant.now() < deadline { lock.wait(until: deadline) }
            return !stopping
        }
    }

    /// Ends the thread; a check under way finishes first (its own timeout bounds it).
    func stop() {
        lock.withLock { stopping = true; lock.broadcast() }
        thread?.join()
        thread = nil
    }
}

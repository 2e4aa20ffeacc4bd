import Crypto
import IO
import Synchronization
import Vocabulary

/// What every loop thread shares to play FCM: the access tokens granted (value → expiry), the
/// project's quota window, and the token endpoint's rules, set once the port is known.
final class FCMSimulatorState: Sendable {
    let projectID: String
    private let tokens = Lock<[String: MonotonicInstant]>([:])
    private let quota: Lock<FCMQuotaWindow>
    private let rules = Lock<FCMTokenRules?>(nil)

    init(projectID: String, quotaPerMinute: Int) {
        self.projectID = projectID
        quota = Lock(FCMQuotaWindow(limit: quotaPerMinute))
    }

    /// The token endpoint's checks: its URI (`aud`) names the port, known only once listening.
    func setTokenRules(_ value: FCMTokenRules) { rules.withLock { $0 = value } }
    var tokenRules: FCMTokenRules? { rules.withLock { $0 } }

    /// A new access token valid for `lifetime`, in Google's `ya29.` form.
    func grant(lifetime: Duration) -> String {
        let token = "ya29.sim." + Base64URL.encode(RandomSource.shared.bytes(24))
        let now = MonotonicInstant.now()
        tokens.withLock { table in
            // Expired tokens are forgotten in passing, so a long run's table stays small.
            if table.count >= 1024 { table = table.filter { $0.value > now } }
            table[token] = now + lifetime
        }
        return token
    }

    /// When `token` (its text) expires, if it was granted here.
    func expiry(of token: Substring.UTF8View) -> MonotonicInstant? {
        let key = String(Substring(token))
        return tokens.withLock { $0[key] }
    }

    /// Bumped by `expireAll`: a handler's remembered good token is good only under the same value.
    var expiryGeneration: Int { generation.load(ordering: .acquiring) }
    private let generation = Atomic<Int>(0)

    /// Expires every token granted so far (a test's "mid-event" expiry, without waiting an hour).
    func expireAll() {
        tokens.withLock { $0.removeAll() }
        generation.add(1, ordering: .releasing)
    }

    /// Whether the service account's key was deleted: no more access tokens (`revoke`).
    var revoked: Bool { revokedFlag.load(ordering: .acquiring) }
    private let revokedFlag = Atomic<Bool>(false)

    /// The key is deleted in the console: every token granted so far stops working and the token
    /// endpoint refuses the account's assertions (`invalid_grant`).
    func revoke() {
        revokedFlag.store(true, ordering: .releasing)
        expireAll()
    }

    /// Counts one message against the quota; the wait when it is spent.
    func admit() -> Duration? { quota.withLock { $0.admit(at: .now()) } }
}

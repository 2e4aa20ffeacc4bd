import Cluster
import DaemonConfiguration
import Fanout
import IO
import Sender
import TokenStore
import Vocabulary

/// Whether an app's credentials still work, found out in the quiet weeks rather than at the
/// earthquake: a revoked key, a team's lapsed membership or a switched-off broadcast capability
/// show as a refused channel listing long before the first warning needs them. Listing the app's
/// channels (`GET …/all-channels` on the channel host) needs a valid provider token and the
/// broadcast capability, and sends nothing to any phone. An app with an Android side also
/// exchanges its service account for an access token.
package struct CredentialCheck: Sendable {
    package var ok: Bool
    /// Wall-clock seconds since 1970 when the answer came.
    package var checkedAt: Int64
    /// Why it failed (APNs' status and reason, or why no answer came); nil when it passed.
    package var message: String?

    /// Checks `runtime`'s credentials and logs a change: the first result, then only a turn from
    /// passing to failing or back — an hourly line that says nothing new would bury the one that does.
    package static func run(_ runtime: AppRuntime, log: DaemonLog) -> CredentialCheck {
        var result: CredentialCheck
        do {
            _ = try runtime.channels.list()
            result = CredentialCheck(ok: true, checkedAt: now(), message: nil)
        } catch {
            result = CredentialCheck(ok: false, checkedAt: now(), message: error.message)
        }
        // The Android side: a token exchange with the service account (a revoked key, a deleted
        // account or a disabled FCM API answers there), sending nothing to any phone.
        if let android = runtime.android {
            do throws(FCMAuthError) { try android.tokens.fetchNow() } catch {
                let message = "FCM service account \(android.account.clientEmail): \(error)"
                result = CredentialCheck(ok: false, checkedAt: now(), message: result.message.map { $0 + "; " + message } ?? message)
            }
        }
        let previous = runtime.credentialCheck.withLock { last in defer { last = result }; return last }
        if previous?.ok != result.ok {
            if let message = result.message {
                log.error("credential check failing", [("app", .text(runtime.name)), ("reason", .text(message))])
            } else {
                log.info(previous == nil ? "credential check passed" : "credential check passing again", [("app", .text(runtime.name))])
            }
        }
        return result
    }

    private static func now() -> Int64 { WallClock.seconds() }
}

/// The credential checks of every app: at start, then every `interval`.
package enum CredentialChecker {
    package static func start(interval: Duration, log: @escaping @Sendable () -> DaemonLog, apps: @escaping @Sendable () -> [AppRuntime]) -> PeriodicThread {
        PeriodicThread(name: "sokuho-creds", interval: interval) { stopping in
            for runtime in apps() where !stopping() { _ = CredentialCheck.run(runtime, log: log()) }
        }
    }
}

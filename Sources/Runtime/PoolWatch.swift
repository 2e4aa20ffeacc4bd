import IO
import Sender
import Vocabulary

/// What the warm pools did between two looks, for the log: a pool that halted (credentials
/// refused, a clock APNs distrusts) or resumed, and one that lost every connection (a reconnect
/// storm: APNs or the network gone) or got one back. The pools expose their state, not events, so
/// it is a look every few seconds — once per change, never per reconnect attempt.
package final class PoolWatch: Sendable {
    /// Per pool (app and provider): its last halt message, whether a connection was up, and whether
    /// the loss of every connection was logged (so only then is getting one back).
    private let seen = Lock<[String: Seen]>([:])

    private struct Seen {
        var halt: String?
        var up = false
        var lost = false
    }

    package init() {}

    /// Looks at every app's pools and logs what changed since the last look.
    package func look(_ runtimes: [AppRuntime], log: DaemonLog) {
        for runtime in runtimes {
            look(runtime.pool, app: runtime.name, provider: "apns", log: log)
            if let android = runtime.android { look(android.pool, app: runtime.name, provider: "fcm", log: log) }
        }
    }

    private func look(_ pool: ConnectionPool, app: String, provider: String, log: DaemonLog) {
        let name = app + " " + provider
        let halt = pool.haltMessage, up = pool.connectionsUp > 0
        let fields: [DaemonLog.Field] = [("app", .text(app)), ("provider", .text(provider))]
        var previous = seen.withLock { $0[name] } ?? Seen()
        if let halt, previous.halt == nil {
            log.error("pool halted: sending stopped", fields + [("reason", .text(halt))])
        } else if halt == nil, previous.halt != nil {
            log.info("pool sending again", fields)
        }
        // Not while halted (the halt says why), and not before the first connection (a start).
        if halt == nil, previous.up, !up, !previous.lost {
            let reason = pool.lastConnectionError.map { String(describing: $0) } ?? "no connection open"
            log.warning("pool lost every connection: reconnecting with back-off", fields + [("reason", .text(reason))])
            previous.lost = true
        } else if up, previous.lost {
            log.info("pool connected again", fields)
            previous.lost = false
        }
        previous.halt = halt
        previous.up = up
        seen.withLock { $0[name] = previous }
    }
}

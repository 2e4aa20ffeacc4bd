import Fanout

/// The event lines of the daemon's log: one when an event is accepted (or resumed after a
/// restart), one when it ends — finished, stopped or failed — with what its report counts. Once
/// per event, never per push: the fan-out's hot path writes nothing here.
extension Service {
    /// What names an event in every line about it (its key is the caller's own name for it, not a secret).
    package static func eventFields(_ event: FanoutEvent) -> [DaemonLog.Field] {
        [("key", .text(event.key)), ("serial", .int(Int(event.serial))), ("kind", .text(event.kind.rawValue))]
    }

    /// An event the queue is done with: info when finished, warning when stopped early (its
    /// reason), error when it failed (its message). A cluster's shard is logged the same way by
    /// the node that sent it, with `extra` naming the shard and the node: no node sends a whole
    /// clustered event, so each says what it did.
    package func logEnded(_ entry: EventQueue.Entry, extra: [DaemonLog.Field] = []) {
        var fields = Self.eventFields(entry.event) + [("app", .text(entry.app.name))] + extra
        if let report = entry.report {
            fields += [("targets", .int(report.targets)), ("delivered", .int(report.delivered)), ("unknown", .int(report.unknown)),
                       ("failed", .int(report.failedTotal)), ("pruned", .int(report.prunedTotal)), ("seconds", .seconds(report.seconds))]
            // Android's share only where the event had Android phones: the line stays short for iOS-only apps.
            if report.android.targets > 0 {
                fields += [("androidTargets", .int(report.android.targets)), ("androidDelivered", .int(report.android.delivered))]
            }
            if let stopped = report.androidStopped { fields.append(("androidStopped", .text(stopped))) }
        }
        switch entry.state {
        case .failed:
            logger.error("event failed", fields + [("error", .text(entry.error ?? "unknown"))])
        case .stopped:
            logger.warning("event stopped", fields + [("reason", .text(entry.report?.stopped ?? "unknown"))])
        default:
            logger.info("event finished", fields)
        }
    }
}

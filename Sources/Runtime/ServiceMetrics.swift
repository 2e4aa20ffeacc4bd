import Cluster
import DaemonConfiguration
import Fanout
import IO
import Sender
import TokenStore
import Vocabulary

/// What `/metrics` counts. Per-push numbers come from the events' reports when each event ends
/// (nothing is counted per push on the hot path); gauges (connections, queue, tokens, clock) are
/// read when scraped. Token counts scan the store's keys: the router hands `render` the ones
/// `Service.tokenStatistics` holds (at most a minute old), counted on a worker when it had none.
package final class ServiceMetrics: Sendable {
    private struct Totals {
        /// (app, event kind, outcome) → pushes.
        var pushes: [Key: Int] = [:]
        /// (app, reason) → tokens APNs called dead.
        var pruned: [Key: Int] = [:]
        /// (app, provider lane) → latencies.
        var latency: [Key: LatencyHistogram] = [:]
        /// (app, provider lane) → tokens removed from the store, and bad-token answers a breaker kept.
        var removed: [Key: Int] = [:]
        var withheld: [Key: Int] = [:]
        var eventSeconds: [Double] = Array(repeating: 0, count: ServiceMetrics.eventBuckets.count)
        var eventCount = 0
        var eventSum = 0.0
        var eventsByState: [String: Int] = [:]
        /// (app, event kind, outcome) → FCM messages (Android phones), also in `pushes`.
        var android: [Key: Int] = [:]
        /// app → Android phones an event did not send to (no `android` member, or Android stopped).
        var androidSkipped: [String: Int] = [:]
    }

    package struct Key: Hashable {
        package var app: String
        package var kind: String
        package var label: String
    }

    private let totals = Lock(Totals())
    package static let eventBuckets: [Double] = [0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 300]
    package static let latencyBucketsMs: [Double] = [1, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10_000]

    package func eventFinished(_ entry: EventQueue.Entry, _ result: FanoutResult?) {
        totals.withLock { totals in
            totals.eventsByState[entry.state.rawValue, default: 0] += 1
            guard let result else { return }
            let report = result.report
            let app = entry.app.name, kind = entry.event.kind.rawValue
            var outcomes: [(String, Int)] = [("delivered", report.delivered), ("unknown", report.unknown), ("expired", report.expired)]
            outcomes += report.failed.map { ("failed:" + $0.key, $0.value) }
            outcomes += report.pruned.map { ("pruned", $0.value) }
            for (outcome, count) in outcomes where count > 0 { totals.pushes[Key(app: app, kind: kind, label: outcome), default: 0] += count }
            for (reason, count) in report.pruned { totals.pruned[Key(app: app, kind: "", label: reason), default: 0] += count }
            let android = report.android
            for (outcome, count) in [("delivered", android.delivered), ("pruned", android.pruned), ("failed", android.failed),
                                     ("unknown", android.unknown), ("expired", android.expired)] where count > 0 {
                totals.android[Key(app: app, kind: kind, label: outcome), default: 0] += count
            }
            if report.androidSkipped > 0 { totals.androidSkipped[app, default: 0] += report.androidSkipped }
            for case let (lane, histogram?) in result.latencies.all {
                totals.latency[Key(app: app, kind: "", label: lane.name), default: LatencyHistogram()].merge(histogram)
            }
            for (lane, books) in report.lanes.all {
                if books.tokensRemoved > 0 { totals.removed[Key(app: app, kind: "", label: lane.name), default: 0] += books.tokensRemoved }
                if books.pruneWithheld > 0 { totals.withheld[Key(app: app, kind: "", label: lane.name), default: 0] += books.pruneWithheld }
            }
            totals.eventCount += 1
            totals.eventSum += report.seconds
            for (index, bound) in Self.eventBuckets.enumerated() where report.seconds <= bound { totals.eventSeconds[index] += 1 }
        }
    }

    package func render(_ service: Service, tokens: StoreStatistics?) -> String {
        var text = PrometheusText()
        let snapshot = totals.withLock { $0 }
        // The version as a label on a constant 1 (Prometheus' build_info convention), so a
        // dashboard or an alert can join any series with the version that produced it.
        text.family("sokuho_build_info", .gauge, help: "Always 1; labels say which build runs.")
        text.sample("sokuho_build_info", [("version", SokuhoVersion.current)], 1)
        text.family("sokuho_pushes_total", .counter, help: "Pushes that reached their final outcome, by app, event kind and outcome (failed:<reason>).")
        for (key, count) in snapshot.pushes.sorted(by: { "\($0.key)" < "\($1.key)" }) {
            let parts = key.label.split(separator: ":", maxSplits: 1).map(String.init)
            var labels = [("app", key.app), ("kind", key.kind), ("outcome", parts[0])]
            if parts.count > 1 { labels.append(("reason", parts[1])) }
            text.sample("sokuho_pushes_total", labels, count)
        }
        text.family("sokuho_pruned_tokens_total", .counter,
                    help: "Answers saying a token is dead, by app and the provider's reason (kept by a tripped breaker too: see sokuho_tokens_removed_total).")
        for (key, count) in snapshot.pruned.sorted(by: { "\($0.key)" < "\($1.key)" }) {
            text.sample("sokuho_pruned_tokens_total", [("app", key.app), ("reason", key.label)], count)
        }
        text.family("sokuho_tokens_removed_total", .counter, help: "Tokens removed from the store after a dead-token answer, by app and provider lane.")
        for (key, count) in snapshot.removed.sorted(by: { "\($0.key)" < "\($1.key)" }) {
            text.sample("sokuho_tokens_removed_total", [("app", key.app), ("provider", key.label)], count)
        }
        text.family("sokuho_prune_withheld_total", .counter,
                    help: "Dead-token answers not pruned because the lane's circuit breaker tripped (a wrong environment, topic or Firebase project), by app and provider lane.")
        for (key, count) in snapshot.withheld.sorted(by: { "\($0.key)" < "\($1.key)" }) {
            text.sample("sokuho_prune_withheld_total", [("app", key.app), ("provider", key.label)], count)
        }
        text.family("sokuho_android_messages_total", .counter,
                    help: "FCM messages to Android phones that reached their final outcome, by app, event kind and outcome (also in sokuho_pushes_total).")
        for (key, count) in snapshot.android.sorted(by: { "\($0.key)" < "\($1.key)" }) {
            text.sample("sokuho_android_messages_total", [("app", key.app), ("kind", key.kind), ("outcome", key.label)], count)
        }
        text.family("sokuho_android_skipped_total", .counter,
                    help: "Android phones events did not send to: the app has no android member, or Android stopped (FCM breaker, refused service account).")
        for (app, count) in snapshot.androidSkipped.sorted(by: { $0.key < $1.key }) { text.sample("sokuho_android_skipped_total", [("app", app)], count) }
        text.family("sokuho_push_latency_seconds", .histogram, help: "From a push's first submission to its final answer, by app and provider lane.")
        for (key, histogram) in snapshot.latency.sorted(by: { "\($0.key)" < "\($1.key)" }) {
            let buckets = Self.latencyBucketsMs.map { (upperBound: $0 / 1000, cumulative: histogram.count(atMost: $0)) }
            text.histogram("sokuho_push_latency_seconds", [("app", key.app), ("provider", key.label)], buckets: buckets,
                           sum: Double(histogram.sumNanoseconds) / 1e9, count: histogram.total)
        }
        text.family("sokuho_event_duration_seconds", .histogram, help: "How long each event's fan-out took.")
        text.histogram("sokuho_event_duration_seconds", buckets: zip(Self.eventBuckets, snapshot.eventSeconds).map { ($0, Int($1)) },
                       sum: snapshot.eventSum, count: snapshot.eventCount)
        text.family("sokuho_events_finished_total", .counter, help: "Events that ended, by state (done, stopped, failed).")
        for (state, count) in snapshot.eventsByState.sorted(by: { $0.key < $1.key }) { text.sample("sokuho_events_finished_total", [("state", state)], count) }
        let (queued, running) = service.events.counts
        text.family("sokuho_events", .gauge, help: "Events accepted and not finished, by state.")
        text.sample("sokuho_events", [("state", "queued")], queued)
        text.sample("sokuho_events", [("state", "running")], running)

        let runtimes = service.apps.withLock { $0 }
        text.family("sokuho_connections_up", .gauge, help: "Connections of an app's warm pool that are connecting or open.")
        for runtime in runtimes { text.sample("sokuho_connections_up", [("app", runtime.name)], runtime.pool.connectionsUp) }
        text.family("sokuho_pushes_in_flight", .gauge, help: "Pushes handed to an app's pool and not yet answered (queued or on a stream).")
        for runtime in runtimes {
            text.sample("sokuho_pushes_in_flight", [("app", runtime.name)], max(0, runtime.pool.submittedCount - runtime.pool.finishedCount))
        }
        text.family("sokuho_provider_tokens_minted_total", .counter, help: "Provider-token (JWT) generations signed, by app.")
        for runtime in runtimes { text.sample("sokuho_provider_tokens_minted_total", [("app", runtime.name)], runtime.tokens.generationsMinted) }
        text.family("sokuho_pool_halted", .gauge, help: "1 when an app's pool stopped sending (credentials refused, server unreachable).")
        for runtime in runtimes { text.sample("sokuho_pool_halted", [("app", runtime.name)], runtime.pool.haltMessage == nil ? 0 : 1) }
        let androids = runtimes.compactMap { runtime in runtime.android.map { (runtime.name, $0) } }
        text.family("sokuho_fcm_connections_up", .gauge, help: "Connections of an app's warm FCM pool (its Android side) that are connecting or open.")
        for (name, android) in androids { text.sample("sokuho_fcm_connections_up", [("app", name)], android.pool.connectionsUp) }
        text.family("sokuho_fcm_pool_halted", .gauge, help: "1 when an app's FCM pool stopped sending (service account refused, FCM unreachable).")
        for (name, android) in androids { text.sample("sokuho_fcm_pool_halted", [("app", name)], android.pool.haltMessage == nil ? 0 : 1) }
        text.family("sokuho_fcm_access_tokens_total", .counter, help: "OAuth access tokens the app's service account was granted.")
        for (name, android) in androids { text.sample("sokuho_fcm_access_tokens_total", [("app", name)], android.tokens.generations) }

        text.family("sokuho_credential_check_ok", .gauge, help: "1 when the app's last credential check (listing its channels) passed; absent before the first.")
        let checks = runtimes.compactMap { runtime in runtime.credentialCheck.withLock { $0 }.map { (runtime.name, $0) } }
        for (app, check) in checks { text.sample("sokuho_credential_check_ok", [("app", app)], check.ok ? 1 : 0) }
        text.family("sokuho_credential_check_timestamp_seconds", .gauge, help: "When the app's last credential check answered (seconds since 1970).")
        for (app, check) in checks { text.sample("sokuho_credential_check_timestamp_seconds", [("app", app)], Int(check.checkedAt)) }
        text.family("sokuho_channel_connections_up", .gauge, help: "An app's kept connection to the channel-management host (0 until its first channel call).")
        for runtime in runtimes { text.sample("sokuho_channel_connections_up", [("app", runtime.name)], runtime.channels.connectionsUp) }
        text.family("sokuho_channel_requests_waiting", .gauge, help: "An app's channel calls waiting for APNs (at most 64; more are refused with 429).")
        for runtime in runtimes { text.sample("sokuho_channel_requests_waiting", [("app", runtime.name)], runtime.channels.callsOutstanding) }
        text.family("sokuho_api_refused_no_descriptor_total", .counter,
                    help: "API connections answered 503 because the daemon had no file descriptor to spare (raise LimitNOFILE).")
        text.sample("sokuho_api_refused_no_descriptor_total", [], service.apiRefusedForDescriptors)

        if let statistics = tokens {
            text.family("sokuho_tokens", .gauge, help: "Registered tokens by app, environment and kind.")
            for count in statistics.tokens {
                text.sample("sokuho_tokens", [("app", count.app), ("environment", count.environment.rawValue), ("kind", count.kind.name)], count.count)
            }
            text.family("sokuho_installations", .gauge, help: "Registered installations.")
            text.sample("sokuho_installations", [], statistics.installations)
        }
        text.family("sokuho_standby", .gauge, help: "1 while this daemon is a standby (sends nothing until promoted), 0 on the primary.")
        text.sample("sokuho_standby", [], service.isStandby ? 1 : 0)
        if service.configuration.standbyBackupFile != nil {
            text.family("sokuho_standby_backup_applied_timestamp_seconds", .gauge, help: "When the standby last applied a shipped backup (seconds since 1970; 0: not yet).")
            text.sample("sokuho_standby_backup_applied_timestamp_seconds", [], service.backupAppliedAt.load(ordering: .acquiring))
        }
        if let cluster = service.cluster { Self.render(cluster, into: &text) }
        service.replication?.metrics(into: &text)
        text.family("sokuho_clock_synchronised", .gauge, help: "1 when the kernel says the system clock is synchronised (provider tokens depend on it).")
        text.sample("sokuho_clock_synchronised", [], ClockStatus.current().synchronised ? 1 : 0)
        ProcessMetrics.render(into: &text)
        return text.text
    }

    /// This node's part in the cluster (only with a `cluster` section).
    package static func render(_ cluster: ClusterNode, into text: inout PrometheusText) {
        let node = [("node", cluster.node)]
        text.family("sokuho_cluster_connected", .gauge, help: "1 when this node's last Redis command got an answer; 0: degraded (events run on this node alone).")
        text.sample("sokuho_cluster_connected", node, cluster.health.connected ? 1 : 0)
        text.family("sokuho_cluster_redis_commands_total", .counter, help: "Commands this node sent to the cluster's Redis.")
        text.sample("sokuho_cluster_redis_commands_total", node, cluster.health.commands.load(ordering: .relaxed))
        let counters = cluster.counters
        text.family("sokuho_cluster_shards_total", .counter, help: "Event shards by what this node did with them: done, taken_over (from a node whose lease ran out), abandoned (this node's lease was gone).")
        for (outcome, count) in [("done", counters.shardsDone.load(ordering: .relaxed)), ("taken_over", counters.takenOver.load(ordering: .relaxed)),
                                 ("abandoned", counters.abandoned.load(ordering: .relaxed))] {
            text.sample("sokuho_cluster_shards_total", node + [("outcome", outcome)], count)
        }
        text.family("sokuho_cluster_events_alone_total", .counter, help: "Events this node accepted while Redis was unreachable and ran alone.")
        text.sample("sokuho_cluster_events_alone_total", node, counters.ranAlone.load(ordering: .relaxed))
        text.family("sokuho_cluster_events_lost_total", .counter, help: "Events this node offered that the cluster's Redis accepted and then lost (a restart without an append-only file) while they could still be sending.")
        text.sample("sokuho_cluster_events_lost_total", node, counters.eventsLost.load(ordering: .relaxed))
        if let persistence = cluster.health.persistence {
            text.family("sokuho_cluster_redis_append_only", .gauge, help: "1 when the cluster's Redis keeps an append-only file (INFO persistence aof_enabled); 0: queued events are lost if it restarts.")
            text.sample("sokuho_cluster_redis_append_only", node, persistence.appendOnly ? 1 : 0)
        }
    }
}

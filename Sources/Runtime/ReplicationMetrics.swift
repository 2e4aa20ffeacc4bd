import Cluster

extension RegistrationReplication {
    /// The replication lines of `/metrics`.
    package func metrics(into text: inout PrometheusText) {
        let status = try? stores.current.replicationStatus()
        text.family("sokuho_cluster_replication_published_total", .counter, help: "Outbox records this node published to the registration stream.")
        text.sample("sokuho_cluster_replication_published_total", [], published.load(ordering: .relaxed))
        text.family("sokuho_cluster_replication_applied_total", .counter, help: "Registration stream entries of other nodes applied to this node's store.")
        text.sample("sokuho_cluster_replication_applied_total", [], applied.load(ordering: .relaxed))
        text.family("sokuho_cluster_replication_own_skipped_total", .counter, help: "Registration stream entries this node's own store published, read back and skipped.")
        text.sample("sokuho_cluster_replication_own_skipped_total", [], skippedOwn.load(ordering: .relaxed))
        text.family("sokuho_cluster_replication_bad_entries_total", .counter, help: "Registration stream entries skipped because they did not decode.")
        text.sample("sokuho_cluster_replication_bad_entries_total", [], badEntries.load(ordering: .relaxed))
        if let status {
            text.family("sokuho_cluster_replication_outbox", .gauge, help: "Local changes committed but not yet published (grows while Redis is unreachable).")
            text.sample("sokuho_cluster_replication_outbox", [], status.outbox)
            text.family("sokuho_cluster_replication_behind", .gauge, help: "1 when entries were trimmed from the stream before this node applied them: restore a peer's backup.")
            text.sample("sokuho_cluster_replication_behind", [], status.behind == nil ? 0 : 1)
        }
    }
}

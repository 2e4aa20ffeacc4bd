// Cluster — this node of a cluster (README, "Cluster").
// - `ClusterNode`: its Redis endpoint, health, counters.
// - `ClusterLink`: a thread's own Redis connection, with back-off.
// - `ShardLease`: a shard held under a fenced lease, extended by a keeper thread.
// - `RegistrationReplication` (ClusterReplication.swift): the publisher and applier threads of the
//   registration stream.

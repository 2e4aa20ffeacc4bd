/// The store key of what a cluster node remembers of an event it offered to the cluster (Runtime's
/// `ClusterAcceptances`): the event key and " ⟨cluster⟩". Its own key, so the event's own records
/// (an event this node ran alone) and its shards' records never mix with it; not replicated (it is
/// this node's memory of what it asked, `WriteOperation.isReplicated`), and never resumed as an
/// event after a restart.
public enum AcceptanceRecordKey {
    public static func make(eventKey: String) -> String { eventKey + suffix }

    /// Whether `key` is such a record's key.
    public static func isAcceptance(_ key: String) -> Bool { key.hasSuffix(suffix) }

    /// Bytes `make` adds to the event key (within `ShardRecordKey.overhead`, the bound a cluster
    /// event's key is checked against).
    public static var overhead: Int { suffix.utf8.count }

    static let suffix = " ⟨cluster⟩"
}

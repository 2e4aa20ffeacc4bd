/// The store key of a cluster shard's event records (`EventShard` in Fanout): the event key and
/// " ⟨shard 3/8⟩" — characters no backend puts in an event key by accident. Kept here because the
/// store decides by it which event records go to the other nodes (`WriteOperation.isReplicated`).
public enum ShardRecordKey {
    /// `shard` one-based, as people count.
    public static func make(eventKey: String, shard: Int, count: Int) -> String { eventKey + marker + "\(shard)/\(count)⟩" }

    /// The event key of a shard's record key; nil for an event's own key.
    public static func eventKey(of key: String) -> String? {
        guard key.hasSuffix("⟩"), let range = key.ranges(of: marker).last else { return nil }
        return String(key[..<range.lowerBound])
    }

    /// The shard (one-based) and shard count a shard's record key names; nil for any other key.
    public static func shard(of key: String) -> (shard: Int, count: Int)? {
        guard key.hasSuffix("⟩"), let range = key.ranges(of: marker).last else { return nil }
        let numbers = key[range.upperBound...].dropLast().split(separator: "/")
        guard numbers.count == 2, let shard = Int(numbers[0]), let count = Int(numbers[1]), (1...count).contains(shard) else { return nil }
        return (shard, count)
    }

    /// Bytes `make` adds to the event key at most.
    public static let overhead = 24

    static let marker = " ⟨shard "
}

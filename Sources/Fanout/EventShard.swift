import TokenStore

/// One of the `count` parts a cluster splits an event into (the README's "Cluster"): the targets
/// whose token hash falls in its range. Every node computes the same split (the hash is fixed, not
/// seeded), a phone's token is in exactly one shard, and the same token is in the same shard in
/// every topic — so each shard's own duplicate check still sees all of a phone's groups.
///
/// A shard keeps its records (serial, report, start checkpoints) under its own key, `recordKey`,
/// so several shards of one event on one node never read each other's progress, and a node that
/// takes a shard over from a dead one resumes from exactly that shard's checkpoint.
public struct EventShard: Sendable, Equatable, CustomStringConvertible {
    public let index: Int
    public let count: Int

    public init?(index: Int, count: Int) {
        guard count >= 1, (0..<count).contains(index) else { return nil }
        self.index = index
        self.count = count
    }

    /// Whether a target with this token hash (`TokenTally.hash`) belongs to this shard.
    @inline(__always)
    func contains(_ hash: UInt64) -> Bool { count == 1 || Int((hash >> 17) % UInt64(count)) == index }

    /// "2/8" (one-based, as people count).
    public var description: String { "\(index + 1)/\(count)" }

    /// The store key of this shard's records (`ShardRecordKey`).
    public func recordKey(_ eventKey: String) -> String { ShardRecordKey.make(eventKey: eventKey, shard: index + 1, count: count) }
}

extension FanoutEvent {
    /// The key the event's records are stored under: its own, or its shard's.
    public var recordKey: String { shard.map { $0.recordKey(key) } ?? key }
}

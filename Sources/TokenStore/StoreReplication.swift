import CLMDB
import Glibc
import IO
import Synchronization
import Vocabulary

/// A store as one replica of a cluster (issue 15): the outbox of changes to publish, the id of
/// the last stream entry applied, and this store's identity, all in `meta`.
///
/// - **Outbox:** once `replicate()` was called, every batch of local writes also appends the
///   encoding (`ReplicatedWrite`) of its replicated operations to `meta` under
///   `replication:outbox:` + a big-endian sequence number, IN THE SAME TRANSACTION as the change:
///   a change committed here is a change that will be published, whether the process dies the next
///   instant or Redis is down for a day. The publisher reads the outbox in order and deletes what
///   the stream took (`removeFromOutbox`). Writes applied from the stream never go to the outbox.
/// - **Applied id:** `applyFromStream` stores the stream id it applied up to in the same
///   transaction as the operations, so a restarted node resumes exactly after it, and a backup
///   carries it: a store restored from a backup catches up from there.
/// - **Identity:** 16 random bytes (hex) that stream entries carry, so a node skips the entries
///   its own store published (they are in it already). A backup leaves the identity and the
///   outbox out (`StoreCopy`): a restored store is a new replica that must apply every entry after
///   its applied id, its old self's included, and must not publish its old self's outbox again.
/// - **Behind:** set when entries after the applied id had been trimmed from the stream before
///   this store read them; kept (a restart does not make the store whole) until a backup of a
///   store that is not behind replaces this one.
extension TokenStore {
    /// Turns replication on (outbox writes from now on) and returns this store's identity,
    /// creating it on first use. Idempotent.
    public func replicate() throws(StoreError) -> String {
        if let id = replication.identity { return id }
        // Settled once, under the switch's lock: two threads switching a fresh store on at once
        // must not publish under two identities, one of which the store would then forget.
        return try replication.settle { () throws(StoreError) -> String in
            let stored = try read { txn throws(StoreError) in
                try txn.get(databases.meta, ReplicationKeys.identity).map { String(decoding: $0, as: UTF8.self) }
            }
            // On before the identity is committed: the outbox does not depend on it, and no local
            // write may slip between "on" and the first change a caller makes after this returns.
            replication.turnOn()
            if let stored { return stored }
            let id = try Self.newIdentity()
            try write([], role: .identify(id))
            return id
        }
    }

    /// This store's identity once `replicate()` was called, else nil.
    public var replicationIdentity: String? { replication.identity }

    /// The applied id, the behind note and the outbox's length.
    public func replicationStatus() throws(StoreError) -> ReplicationStatus {
        try read { txn throws(StoreError) in
            let meta = databases.meta
            let applied = try txn.get(meta, ReplicationKeys.applied).map { String(decoding: $0, as: UTF8.self) }
            let behind = try txn.get(meta, ReplicationKeys.behind).map { String(decoding: $0, as: UTF8.self) }
            let outbox = try txn.withCursor(meta) { cursor throws(StoreError) in
                var count = 0
                var position = try cursor.get(MDB_SET_RANGE, key: ReplicationKeys.outboxPrefix)
                while let (key, _) = position, key.starts(with: ReplicationKeys.outboxPrefix) {
                    count += 1
                    position = try cursor.get(MDB_NEXT)
                }
                return count
            }
            return ReplicationStatus(applied: applied, behind: behind, outbox: outbox)
        }
    }

    /// Up to `limit` outbox records in order, the oldest first.
    public func outbox(limit: Int) throws(StoreError) -> [OutboxRecord] {
        try read { txn throws(StoreError) in
            try txn.withCursor(databases.meta) { cursor throws(StoreError) in
                var records: [OutboxRecord] = []
                var position = try cursor.get(MDB_SET_RANGE, key: ReplicationKeys.outboxPrefix)
                while records.count < limit, let (key, value) = position, key.starts(with: ReplicationKeys.outboxPrefix) {
                    guard let sequence = ReplicationKeys.outboxSequence(key) else {
                        throw StoreError.corrupt(path: directory, detail: "an outbox key has \(key.count) bytes")
                    }
                    records.append(OutboxRecord(sequence: sequence, operations: Array(value)))
                    position = try cursor.get(MDB_NEXT)
                }
                return records
            }
        }
    }

    /// Deletes the outbox records up to `sequence`: the stream has them. Not flushed to disk: a
    /// record that comes back after a power cut is published twice, and applying it twice is
    /// applying the same change again.
    public func removeFromOutbox(through sequence: UInt64) throws(StoreError) {
        try write([], role: .published(through: sequence), durable: false)
    }

    /// Applies operations read from the stream, up to and including entry `streamID`, and stores
    /// that id with them in one transaction; none goes to the outbox. `behind` (set once, when a
    /// gap is found) says what was trimmed away unread. Not flushed to disk: after a power cut the
    /// operations and the id are lost together and read again.
    public func applyFromStream(_ operations: [WriteOperation], through streamID: String, behind: String? = nil) throws(StoreError) {
        try write(operations, role: .fromStream(streamID: streamID, behind: behind), durable: false)
    }

    private func write(_ operations: [WriteOperation], role: WriteRole, durable: Bool = true) throws(StoreError) {
        let ticket = WriteTicket()
        try submit(operations, durable: durable, role: role) { ticket.completion.fulfil($0) }
        _ = try ticket.wait()
    }

    /// 16 bytes from the kernel's random source, as hex.
    static func newIdentity() throws(StoreError) -> String {
        var bytes = [UInt8](repeating: 0, count: 16)
        let fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw StoreError.invalid("cannot open /dev/urandom for the store's replica identity: \(String(cString: strerror(errno)))") }
        defer { Syscall.expect("close (/dev/urandom)", tolerating: [EINTR], Glibc.close(fd)) }
        let count = bytes.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
        guard count == bytes.count else { throw StoreError.invalid("cannot read /dev/urandom for the store's replica identity") }
        return Hex.encode(bytes)
    }
}

/// What `TokenStore.replicationStatus` reports.
public struct ReplicationStatus: Sendable, Equatable {
    /// The last stream entry applied (or skipped as this store's own), or nil: none yet.
    public var applied: String?
    /// Why this store is known to miss changes (entries trimmed before it read them), or nil.
    public var behind: String?
    /// Outbox records not yet published.
    public var outbox: Int
}

/// One outbox record: a batch's replicated operations, encoded (`ReplicatedWrite`).
public struct OutboxRecord: Sendable, Equatable {
    public let sequence: UInt64
    public let operations: [UInt8]
}

/// What a batch handed to the writer is, for replication.
enum WriteRole: Sendable {
    /// Changes made here: with replication on, their replicated operations go to the outbox.
    case local
    /// Changes read from the stream up to entry `streamID` (never to the outbox: no echo).
    case fromStream(streamID: String, behind: String?)
    /// Outbox records up to `through` are in the stream: delete them.
    case published(through: UInt64)
    /// Records the store's replica identity.
    case identify(String)
}

/// Whether the writer fills the outbox, and the identity `replicate()` settled on.
final class ReplicationSwitch: Sendable {
    private let state = Lock<String?>(nil)
    private let on = Atomic<Bool>(false)

    var isOn: Bool { on.load(ordering: .acquiring) }
    var identity: String? { state.withLock { $0 } }

    func turnOn() { on.store(true, ordering: .releasing) }

    /// The identity, found or made by `body` the first time, with the lock held throughout (the
    /// writer thread never takes it, so `body` may wait for a write).
    func settle(_ body: () throws(StoreError) -> String) throws(StoreError) -> String {
        try state.withLock { (identity: inout String?) throws(StoreError) -> String in
            if let identity { return identity }
            let settled = try body()
            identity = settled
            return settled
        }
    }
}

/// The `meta` keys of replication. A common prefix, so a backup can leave some out by prefix.
enum ReplicationKeys {
    static let outboxPrefix = Array("replication:outbox:".utf8)
    static let outboxNext = Array("replication:outbox-next".utf8)
    static let applied = Array("replication:applied".utf8)
    static let behind = Array("replication:behind".utf8)
    static let identity = Array("replication:identity".utf8)

    /// What a backup leaves out: the outbox (its old self published it, or it is lost with the
    /// store being replaced) and the identity (a restored store is a new replica).
    static func isLocalOnly(_ key: UnsafeRawBufferPointer) -> Bool {
        key.starts(with: outboxPrefix) || key.elementsEqual(outboxNext) || key.elementsEqual(identity)
    }

    static func outbox(_ sequence: UInt64) -> [UInt8] {
        var writer = RecordWriter()
        writer.bytes = outboxPrefix
        writer.uint64(sequence)
        return writer.bytes
    }

    static func outboxSequence(_ key: UnsafeRawBufferPointer) -> UInt64? {
        guard key.count == outboxPrefix.count + 8 else { return nil }
        return key[outboxPrefix.count...].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
    }

    /// At most this many operations per outbox record (one stream entry): a big local batch (a
    /// fan-out pruning thousands of tokens) becomes several entries of bounded size.
    static let operationsPerRecord = 512
}

extension RegistryUpdate {
    /// The replication side of a committed batch, in its transaction: outbox records for the
    /// local batches when `replicating`, the applied id of the stream batches, deleted outbox
    /// records, the identity.
    func recordReplication(_ batch: [(operations: [WriteOperation], role: WriteRole)], replicating: Bool) throws(StoreError) {
        var local: [WriteOperation] = []
        for (operations, role) in batch {
            switch role {
            case .local:
                if replicating { local.append(contentsOf: operations.lazy.filter(\.isReplicated)) }
            case let .fromStream(streamID, behind):
                try txn.put(databases.meta, ReplicationKeys.applied, Array(streamID.utf8))
                if let behind { try txn.put(databases.meta, ReplicationKeys.behind, Array(behind.utf8)) }
            case let .published(through):
                try deleteOutbox(through: through)
            case let .identify(identity):
                try txn.put(databases.meta, ReplicationKeys.identity, Array(identity.utf8))
            }
        }
        guard !local.isEmpty else { return }
        var next: UInt64 = 0
        if let stored = try txn.get(databases.meta, ReplicationKeys.outboxNext) {
            var reader = RecordReader(stored, what: "the outbox's next sequence number")
            next = try reader.uint64()
        }
        var start = 0
        while start < local.count {
            let end = min(start + ReplicationKeys.operationsPerRecord, local.count)
            try txn.put(databases.meta, ReplicationKeys.outbox(next), ReplicatedWrite.encode(local[start..<end]))
            next += 1
            start = end
        }
        var writer = RecordWriter()
        writer.uint64(next)
        try txn.put(databases.meta, ReplicationKeys.outboxNext, writer.bytes)
    }

    private func deleteOutbox(through sequence: UInt64) throws(StoreError) {
        let keys = try txn.withCursor(databases.meta) { cursor throws(StoreError) in
            var keys: [[UInt8]] = []
            var position = try cursor.get(MDB_SET_RANGE, key: ReplicationKeys.outboxPrefix)
            while let (key, _) = position, key.starts(with: ReplicationKeys.outboxPrefix),
                  let found = ReplicationKeys.outboxSequence(key), found <= sequence {
                keys.append(Array(key))
                position = try cursor.get(MDB_NEXT)
            }
            return keys
        }
        for key in keys { try txn.delete(databases.meta, key) }
    }
}

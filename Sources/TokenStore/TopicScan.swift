import APNs
import CLMDB
import Glibc

/// A position in a topic's target order: everything up to and including this entry has been
/// handed out. Store its `bytes` with the event's progress to resume after a restart. Watermarks
/// order as the scan does (token length, then the entry's bytes), so of two the greater is
/// further along: a fan-out acknowledging targets out of order can keep the right one.
public struct TopicWatermark: Sendable, Equatable, Comparable {
    let tokenLength: UInt8
    /// The last `topics` duplicate handed out: min level, kind byte, token.
    let entry: [UInt8]

    public var bytes: [UInt8] { [tokenLength] + entry }

    public init?(bytes: [UInt8]) {
        guard let length = bytes.first, bytes.count == Int(length) + 3 else { return nil }
        tokenLength = length
        entry = Array(bytes[1...])
    }

    init(tokenLength: UInt8, entry: [UInt8]) {
        self.tokenLength = tokenLength
        self.entry = entry
    }

    public static func < (lhs: TopicWatermark, rhs: TopicWatermark) -> Bool {
        // Entries of one token length have one size: byte order is LMDB's duplicate order.
        lhs.tokenLength != rhs.tokenLength ? lhs.tokenLength < rhs.tokenLength : lhs.entry.lexicographicallyPrecedes(rhs.entry)
    }
}

/// A batch of targets: tokens back to back in one buffer (no allocation per token), with their
/// kinds, min levels and broadcast flags, and the watermark after the last one. Reuse one batch
/// across `TopicScan.next` calls.
public struct TargetBatch: Sendable {
    public private(set) var tokenBytes: [UInt8] = []
    private var ends: [Int] = []
    public private(set) var kinds: [TokenKind] = []
    /// The minimum level each target subscribed with.
    public private(set) var minLevels: [UInt8] = []
    /// Whether each target's installation is on iOS 18 or later (`Installation.broadcast`).
    public private(set) var broadcast: [Bool] = []
    /// Where the next batch starts; nil before the first batch.
    public internal(set) var watermark: TopicWatermark?

    public init() {}

    public var count: Int { ends.count }
    public var isEmpty: Bool { ends.isEmpty }

    /// The token of target `index` (a slice of `tokenBytes`, no copy).
    public func token(at index: Int) -> ArraySlice<UInt8> {
        tokenBytes[(index == 0 ? 0 : ends[index - 1])..<ends[index]]
    }

    /// The watermark just after target `index`: a scan resumed from it starts with target
    /// `index + 1`. A fan-out that has sent only part of a batch saves this one.
    public func watermark(at index: Int) -> TopicWatermark {
        let token = token(at: index)
        var entry = [UInt8]()
        entry.reserveCapacity(token.count + 2)
        entry.append(minLevels[index])
        entry.append(StoreKeys.topicKindByte(kinds[index], broadcast: broadcast[index]))
        entry.append(contentsOf: token)
        return TopicWatermark(tokenLength: UInt8(token.count), entry: entry)
    }

    mutating func removeAll() {
        tokenBytes.removeAll(keepingCapacity: true)
        ends.removeAll(keepingCapacity: true)
        kinds.removeAll(keepingCapacity: true)
        minLevels.removeAll(keepingCapacity: true)
        broadcast.removeAll(keepingCapacity: true)
    }

    mutating func append(_ token: UnsafeRawBufferPointer, kind: TokenKind, minLevel: UInt8, broadcast: Bool) {
        tokenBytes.append(contentsOf: token)
        ends.append(tokenBytes.count)
        kinds.append(kind)
        minLevels.append(minLevel)
        self.broadcast.append(broadcast)
    }
}

/// Streams every token of a topic whose minimum level is at most the event's level, in a stable
/// order: token length, then min level, then kind byte (kind, broadcast-capable after not), then
/// token bytes. Each `next` opens its own
/// short read transaction and resumes from the watermark, so memory is one batch and a scan that
/// waits for a slow fan-out pins no pages.
///
/// The `topics` database is DUPSORT + DUPFIXED with the min level as the first byte of each
/// duplicate: the targets of level L are a prefix of each key's duplicates, read a page at a time
/// with `MDB_GET_MULTIPLE`/`MDB_NEXT_MULTIPLE`.
public final class TopicScan {
    private let store: TokenStore
    private let prefix: [UInt8]
    private let level: UInt8
    private let kind: TokenKind?
    /// A kind left out (an event's APNs scan leaves the FCM tokens to a scan of their own).
    private let excluded: TokenKind?
    /// Targets per `next` (at least 1); a caller may change it between batches.
    public var batchSize: Int { didSet { batchSize = max(1, batchSize) } }
    private var watermark: TopicWatermark?
    private var finished = false

    init(store: TokenStore, prefix: [UInt8], level: UInt8, kind: TokenKind?, excluding excluded: TokenKind? = nil, watermark: TopicWatermark?,
         batchSize: Int) {
        self.store = store
        self.prefix = prefix
        self.level = level
        self.kind = kind
        self.excluded = excluded
        self.watermark = watermark
        self.batchSize = max(1, batchSize)
    }

    /// Fills `batch` with the next targets; false (and an empty batch) when the topic is done.
    public func next(into batch: inout TargetBatch) throws(StoreError) -> Bool {
        batch.removeAll()
        guard !finished else { return false }
        let store = self.store
        let (newWatermark, done) = try store.read { txn throws(StoreError) in
            try txn.withCursor(store.databases.topics) { cursor throws(StoreError) in try fill(&batch, cursor: cursor) }
        }
        watermark = newWatermark
        batch.watermark = newWatermark
        finished = done
        return !batch.isEmpty
    }

    /// Reads from the cursor into `batch`; returns the watermark and whether the topic is done.
    private func fill(_ batch: inout TargetBatch, cursor: borrowing LMDBCursor) throws(StoreError) -> (TopicWatermark?, Bool) {
        // The last entry handed out or skipped, pointing into the map (copied only on return).
        var last: (length: UInt8, entry: UnsafeRawBufferPointer)?
        func mark() -> TopicWatermark? {
            last.map { TopicWatermark(tokenLength: $0.length, entry: Array($0.entry)) } ?? watermark
        }
        // Position at the first key of the topic, or at the watermark's duplicate (or after it).
        var found: Bool
        if let mark = watermark {
            found = try cursor.get(MDB_GET_BOTH_RANGE, key: prefix + [mark.tokenLength], value: mark.entry) != nil
            if !found, mark.tokenLength < UInt8.max {
                found = try cursor.get(MDB_SET_RANGE, key: prefix + [mark.tokenLength + 1]) != nil
            }
        } else {
            found = try cursor.get(MDB_SET_RANGE, key: prefix) != nil
        }
        while found {
            guard let (key, _) = try cursor.get(MDB_GET_CURRENT), key.count == prefix.count + 1,
                  prefix.withUnsafeBytes({ memcmp($0.baseAddress!, key.baseAddress!, prefix.count) == 0 }) else {
                return (mark(), true)
            }
            let tokenLength = Int(key[prefix.count])
            let stride = tokenLength + 2
            // Entries up to the watermark were handed out already (GET_MULTIPLE returns whole pages).
            var skipUpTo = watermark?.tokenLength == UInt8(tokenLength) && last == nil ? watermark?.entry : nil
            // A key with one duplicate is not a sub-database, and GET_MULTIPLE on it reads the
            // duplicate cursor as the previous key left it (a scan that stopped part-way through
            // that key's page at the event's level got its page again, of another token length):
            // its one value is the entry. Only a key with several has pages to read.
            var page = try cursor.duplicateCount() > 1 ? try cursor.get(MDB_GET_MULTIPLE) : try cursor.get(MDB_GET_CURRENT)
            pages: while let data = page?.value {
                guard data.count % stride == 0 else {
                    throw StoreError.corrupt(path: store.directory, detail: "a topic entry has the wrong size")
                }
                var offset = 0
                while offset < data.count {
                    let entry = UnsafeRawBufferPointer(rebasing: data[offset..<offset + stride])
                    offset += stride
                    if entry[0] > level { break pages } // the rest of this key is for higher levels
                    if let skip = skipUpTo {
                        if skip.withUnsafeBytes({ memcmp(entry.baseAddress!, $0.baseAddress!, stride) }) <= 0 { continue }
                        skipUpTo = nil
                    }
                    guard let (entryKind, broadcast) = StoreKeys.parseTopicKind(entry[1]) else {
                        throw StoreError.corrupt(path: store.directory, detail: "a topic entry has an unknown token kind")
                    }
                    last = (UInt8(tokenLength), entry)
                    if let kind, kind != entryKind { continue }
                    if let excluded, excluded == entryKind { continue }
                    batch.append(UnsafeRawBufferPointer(rebasing: entry[2...]), kind: entryKind, minLevel: entry[0], broadcast: broadcast)
                    if batch.count == batchSize { return (mark(), false) }
                }
                page = try cursor.get(MDB_NEXT_MULTIPLE)
            }
            found = try cursor.get(MDB_NEXT_NODUP) != nil
        }
        return (mark(), true)
    }
}

import APNs
import CLMDB

/// The store's lookups: records by key, the activities of an event, channels, a paged walk over
/// every installation, and topic scans. Each runs in its own read transaction (`read`).
extension TokenStore {
    public func installation(id: String) throws(StoreError) -> Installation? {
        try read { txn throws(StoreError) in
            guard let bytes = try txn.get(databases.installations, StoreKeys.installation(id)) else { return nil }
            return try Installation(id: id, decoding: bytes)
        }
    }

    /// Who holds a token, and since when (ms): what a 410's timestamp is compared with.
    public func tokenOwner(app: String, environment: Environment, kind: TokenKind, token: [UInt8]) throws(StoreError)
        -> (installationID: String, registeredAt: UInt64)? {
        try read { txn throws(StoreError) in
            let key = StoreKeys.token(app: app, environment: environment, kind: kind, token: token)
            guard let value = try txn.get(databases.tokens, key) else { return nil }
            let (registeredAt, owner) = try StoreKeys.parseTokenValue(value)
            return (owner, registeredAt)
        }
    }

    public func activity(id: String) throws(StoreError) -> ActivityRecord? {
        try read { txn throws(StoreError) in
            guard let bytes = try txn.get(databases.activities, Array(id.utf8)) else { return nil }
            return try ActivityRecord(id: id, decoding: bytes)
        }
    }

    /// The running activities showing `eventKey` (where an iOS 17 update or end goes), by id.
    public func activities(eventKey: String) throws(StoreError) -> [ActivityRecord] {
        try read { txn throws(StoreError) in
            let ids = try txn.withCursor(databases.activityEvents) { cursor throws(StoreError) in
                var ids: [String] = []
                var position = try cursor.get(MDB_SET_KEY, key: Array(eventKey.utf8))
                while let (_, value) = position {
                    ids.append(String(decoding: value, as: UTF8.self))
                    position = try cursor.get(MDB_NEXT_DUP)
                }
                return ids
            }
            var result: [ActivityRecord] = []
            for id in ids {
                guard let bytes = try txn.get(databases.activities, Array(id.utf8)) else {
                    throw StoreError.corrupt(path: directory, detail: "activity '\(id)' of event '\(eventKey)' is missing")
                }
                result.append(try ActivityRecord(id: id, decoding: bytes))
            }
            return result
        }
    }

    /// The channels of an app in an environment, by name.
    public func channels(app: String, environment: Environment) throws(StoreError) -> [ChannelRecord] {
        try read { txn throws(StoreError) in
            let prefix = StoreKeys.channel(app: app, environment: environment, name: "")
            return try txn.withCursor(databases.channels) { cursor throws(StoreError) in
                var result: [ChannelRecord] = []
                var position = try cursor.get(MDB_SET_RANGE, key: prefix)
                while let (key, value) = position, key.count >= prefix.count, Array(key[..<prefix.count]) == prefix {
                    let name = String(decoding: key[prefix.count...], as: UTF8.self)
                    result.append(try ChannelRecord(app: app, environment: environment, name: name, decoding: value))
                    position = try cursor.get(MDB_NEXT)
                }
                return result
            }
        }
    }

    public func channel(app: String, environment: Environment, name: String) throws(StoreError) -> ChannelRecord? {
        try read { txn throws(StoreError) in
            guard let bytes = try txn.get(databases.channels, StoreKeys.channel(app: app, environment: environment, name: name)) else { return nil }
            return try ChannelRecord(app: app, environment: environment, name: name, decoding: bytes)
        }
    }

    /// Every record of an event key: its serials (ascending) and the start progress of its topics.
    public func eventRecords(eventKey: String) throws(StoreError) -> (serials: [EventSerialRecord], starts: [StartProgress]) {
        let prefix = EventRecordKey.prefix(eventKey: eventKey)
        return try eventRecords(from: prefix) { $0.starts(with: prefix) }
    }

    /// The serial records of every cluster shard of `eventKey`, any serial and shard split
    /// (`ShardRecordKey`): each node holds every node's, replicated, so they outlive the cluster's
    /// Redis. Their start records and answer segments are passed over, not decoded.
    public func shardSerials(eventKey: String) throws(StoreError) -> [EventSerialRecord] {
        let prefix = Array((eventKey + ShardRecordKey.marker).utf8)
        return try read { txn throws(StoreError) in
            try txn.withCursor(databases.events) { cursor throws(StoreError) in
                var serials: [EventSerialRecord] = []
                var position = try cursor.get(MDB_SET_RANGE, key: prefix)
                while let (key, value) = position, key.starts(with: prefix) {
                    if let nul = key.firstIndex(of: 0), nul + 1 < key.count, key[nul + 1] == UInt8(ascii: "s"),
                       case let .serial(record) = try EventStoreRecord(key: key, value: value) {
                        serials.append(record)
                    }
                    position = try cursor.get(MDB_NEXT)
                }
                return serials
            }
        }
    }

    /// The token hashes an update or end of `serial` has answers for, every segment together, and
    /// the number of the next segment to write (a resumed run numbers on from there).
    public func updateAnswers(eventKey: String, serial: UInt32) throws(StoreError) -> (hashes: Set<UInt64>, nextSegment: UInt32) {
        let prefix = EventRecordKey.updateAnswers(eventKey: eventKey, serial: serial)
        return try read { txn throws(StoreError) in
            try txn.withCursor(databases.events) { cursor throws(StoreError) in
                var hashes = Set<UInt64>()
                var next: UInt32 = 0
                var position = try cursor.get(MDB_SET_RANGE, key: prefix)
                while let (key, value) = position, key.count == prefix.count + 4, key.starts(with: prefix) {
                    if case let .updateAnswers(answers) = try EventStoreRecord(key: key, value: value) {
                        hashes.formUnion(answers.hashes)
                        next = max(next, answers.segment &+ 1)
                    }
                    position = try cursor.get(MDB_NEXT)
                }
                return (hashes, next)
            }
        }
    }

    /// Every serial record in `phase` (e.g. the events a daemon accepted but had not finished when
    /// it stopped), by event key and serial.
    public func eventSerials(in phase: EventSerialRecord.Phase) throws(StoreError) -> [EventSerialRecord] {
        try eventRecords(from: []) { _ in true }.serials.filter { $0.phase == phase }
    }

    /// The start progress of every event updated at or after `since` (ms since 1970): what a
    /// phone's recent starts are counted from.
    public func startProgress(updatedSince since: UInt64) throws(StoreError) -> [StartProgress] {
        try eventRecords(from: []) { _ in true }.starts.filter { $0.updatedAt >= since }
    }

    private func eventRecords(from prefix: [UInt8], while inRange: (UnsafeRawBufferPointer) -> Bool) throws(StoreError)
        -> (serials: [EventSerialRecord], starts: [StartProgress]) {
        try read { txn throws(StoreError) in
            try txn.withCursor(databases.events) { cursor throws(StoreError) in
                var serials: [EventSerialRecord] = []
                var starts: [StartProgress] = []
                // An event key's answer segments ("a") sort before its start records ("t").
                var segments: [String: [String: [(number: UInt32, hashes: [UInt64])]]] = [:]
                var position = try prefix.isEmpty ? cursor.get(MDB_FIRST) : cursor.get(MDB_SET_RANGE, key: prefix)
                while let (key, value) = position, inRange(key) {
                    switch try EventStoreRecord(key: key, value: value) {
                    case let .serial(record): serials.append(record)
                    case let .start(progress): starts.append(progress.merging(segments: segments[progress.eventKey]?[progress.topic] ?? []))
                    case let .answers(eventKey, topic, segment, hashes): segments[eventKey, default: [:]][topic, default: []].append((segment, hashes))
                    case .updateAnswers: break  // read by `updateAnswers(eventKey:serial:)`
                    }
                    position = try cursor.get(MDB_NEXT)
                }
                return (serials, starts)
            }
        }
    }

    /// Calls `body` for every installation in key order (lowercase UUID ids in id order, then
    /// uppercase ones, then every other id in id order: see `StoreKeys.installation`), reading `chunk` at a time in short read
    /// transactions, so a long export neither pins old pages nor holds up a map growth.
    public func forEachInstallation(chunk: Int = 1000, _ body: (Installation) throws(StoreError) -> Void) throws(StoreError) {
        try forEachInstallation(chunk: chunk, withTimes: false) { installation, _ throws(StoreError) in try body(installation) }
    }

    /// The same walk, with when each token was registered (from the token index, read in the
    /// same transaction as the record): what an export writes.
    public func forEachInstallationWithRegistrationTimes(chunk: Int = 1000,
                                                         _ body: (Installation, RegistrationTimes) throws(StoreError) -> Void) throws(StoreError) {
        try forEachInstallation(chunk: chunk, withTimes: true, body)
    }

    private func forEachInstallation(chunk: Int, withTimes: Bool,
                                     _ body: (Installation, RegistrationTimes) throws(StoreError) -> Void) throws(StoreError) {
        try forEachRecord(databases.installations, chunk: chunk, decode: { txn, key, value throws(StoreError) in
            let installation = try Installation(id: StoreKeys.installationID(key), decoding: value)
            var times = RegistrationTimes()
            for (kind, token) in installation.tokens where withTimes {
                let tokenKey = StoreKeys.token(app: installation.app, environment: installation.environment, kind: kind, token: token)
                guard let entry = try txn.get(databases.tokens, tokenKey) else { continue }
                let (registeredAt, owner) = try StoreKeys.parseTokenValue(entry)
                if owner == installation.id { times[kind] = registeredAt }
            }
            return (installation, times)
        }, body)
    }

    /// Calls `body` for every activity (expired ones not yet swept too) in id order, `chunk` at
    /// a time like `forEachInstallation`: what an export writes after the installations.
    public func forEachActivity(chunk: Int = 1000, _ body: (ActivityRecord) throws(StoreError) -> Void) throws(StoreError) {
        try forEachRecord(databases.activities, chunk: chunk, decode: { _, key, value throws(StoreError) in
            try ActivityRecord(id: String(decoding: key, as: UTF8.self), decoding: value)
        }, body)
    }

    /// Walks `dbi` in key order, `chunk` records per short read transaction (`decode` runs inside
    /// it, `body` outside), so a long walk neither pins old pages nor holds up a map growth.
    private func forEachRecord<Record>(_ dbi: MDB_dbi, chunk: Int,
                                       decode: (borrowing LMDBTransaction, UnsafeRawBufferPointer, UnsafeRawBufferPointer) throws(StoreError) -> Record,
                                       _ body: (Record) throws(StoreError) -> Void) throws(StoreError) {
        var after: [UInt8]?
        while true {
            let (records, lastKey): ([Record], [UInt8]?) = try read { txn throws(StoreError) in
                try txn.withCursor(dbi) { cursor throws(StoreError) in
                    var position: (key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer)?
                    if let after {
                        position = try cursor.get(MDB_SET_RANGE, key: after)
                        if let current = position, Array(current.key) == after { position = try cursor.get(MDB_NEXT) }
                    } else {
                        position = try cursor.get(MDB_FIRST)
                    }
                    var result: [Record] = []
                    var lastKey: UnsafeRawBufferPointer?
                    while let (key, value) = position, result.count < chunk {
                        result.append(try decode(txn, key, value))
                        lastKey = key
                        position = try cursor.get(MDB_NEXT)
                    }
                    return (result, lastKey.map(Array.init))
                }
            }
            for record in records { try body(record) }
            guard records.count == chunk, let lastKey else { return }
            after = lastKey
        }
    }

    /// Streams the targets of an event of `level` on `topic`: see `TopicScan`.
    /// How many targets (tokens of every kind, at every level) subscribe to `topic`: the index's
    /// duplicate counts, one per token length, without reading the entries.
    public func topicTargetCount(app: String, environment: Environment, topic: String) throws(StoreError) -> Int {
        let prefix = StoreKeys.topicPrefix(app: app, environment: environment, topic: topic)
        return try read { txn throws(StoreError) in
            try txn.withCursor(databases.topics) { cursor throws(StoreError) in
                var total = 0
                var position = try cursor.get(MDB_SET_RANGE, key: prefix)
                while let (key, _) = position, key.count == prefix.count + 1, key.starts(with: prefix) {
                    total += try cursor.duplicateCount()
                    position = try cursor.get(MDB_NEXT_NODUP)
                }
                return total
            }
        }
    }

    public func scanTopic(app: String, environment: Environment, topic: String, level: UInt8,
                          kind: TokenKind? = nil, excluding excluded: TokenKind? = nil, after watermark: TopicWatermark? = nil,
                          batch: Int = 4096) -> TopicScan {
        TopicScan(store: self, prefix: StoreKeys.topicPrefix(app: app, environment: environment, topic: topic),
                  level: level, kind: kind, excluding: excluded, watermark: watermark, batchSize: batch)
    }
}

/// When each token of an installation was registered (ms since 1970), as the token index says.
public struct RegistrationTimes: Sendable, Equatable {
    public var pushToStart: UInt64?
    public var device: UInt64?
    public var fcm: UInt64?

    public init(pushToStart: UInt64? = nil, device: UInt64? = nil, fcm: UInt64? = nil) {
        self.pushToStart = pushToStart
        self.device = device
        self.fcm = fcm
    }

    public subscript(kind: TokenKind) -> UInt64? {
        get {
            switch kind {
            case .pushToStart: pushToStart
            case .device: device
            case .fcm: fcm
            }
        }
        set {
            switch kind {
            case .pushToStart: pushToStart = newValue
            case .device: device = newValue
            case .fcm: fcm = newValue
            }
        }
    }
}

import APNs
import CLMDB

/// The removing half of `RegistryUpdate`: a token dropped from its installation (rotation, a
/// takeover, a 410), whole installations and activities, and the expiry sweep. Every removal
/// takes the index entries with it, so `TokenStore.check()` stays consistent.
extension RegistryUpdate {
    /// The installation loses its token of `kind`: the record and every index entry of it.
    func dropToken(of installation: Installation, kind: TokenKind) throws(StoreError) {
        try unindexToken(of: installation, kind: kind)
        var changed = installation
        changed.setToken(nil, kind: kind)
        changed.setTopics([], kind: kind)
        try save(changed)
    }

    /// Removes the `tokens` entry and the `topics` entries of the installation's token of `kind`.
    func unindexToken(of installation: Installation, kind: TokenKind) throws(StoreError) {
        guard let token = installation.token(kind) else { return }
        try txn.delete(databases.tokens, tokenKey(installation, kind, token))
        for (topicKey, entry) in topicEntries(installation, kind: kind, token: token) {
            try txn.delete(databases.topics, topicKey, value: entry)
        }
    }

    func removeToken(app: String, environment: Environment, kind: TokenKind, token: [UInt8],
                             registeredBefore: UInt64?) throws(StoreError) -> Bool {
        let key = StoreKeys.token(app: app, environment: environment, kind: kind, token: token)
        guard let value = try txn.get(databases.tokens, key) else { return false }
        let (registeredAt, owner) = try StoreKeys.parseTokenValue(value)
        if let registeredBefore, registeredAt >= registeredBefore { return false }
        if let installation = try installation(owner), installation.token(kind) == token {
            try dropToken(of: installation, kind: kind)
        } else {
            try txn.delete(databases.tokens, key)
        }
        return true
    }

    /// Removes an activity and its event index entry.
    func removeActivity(_ id: String) throws(StoreError) {
        let key = Array(id.utf8)
        guard let bytes = try txn.get(databases.activities, key) else { return }
        let activity = try ActivityRecord(id: id, decoding: bytes)
        try txn.delete(databases.activityEvents, Array(activity.eventKey.utf8), value: key)
        try txn.delete(databases.activities, key)
    }

    func removeInstallation(_ id: String) throws(StoreError) {
        guard let installation = try installation(id) else { return }
        for kind in TokenKind.allCases { try unindexToken(of: installation, kind: kind) }
        try txn.delete(databases.installations, StoreKeys.installation(id))
    }

    /// Removes every record of an event key: its serials and its start progress.
    func removeEvent(_ eventKey: String) throws(StoreError) {
        try removeEventRecords(prefix: EventRecordKey.prefix(eventKey: eventKey))
    }

    /// Removes every event record whose key starts with `prefix`.
    func removeEventRecords(prefix: [UInt8]) throws(StoreError) {
        let keys = try txn.withCursor(databases.events) { cursor throws(StoreError) in
            var keys: [[UInt8]] = []
            var position = try cursor.get(MDB_SET_RANGE, key: prefix)
            while let (key, _) = position, key.count >= prefix.count, key.starts(with: prefix) {
                keys.append(Array(key))
                position = try cursor.get(MDB_NEXT)
            }
            return keys
        }
        for key in keys { try txn.delete(databases.events, key) }
    }

    /// A start record, its answers as a segment or in itself (`AnswerLog`), and the segments it
    /// no longer needs dropped — a cursor over that record's few segments, not a scan.
    func putStartProgress(_ progress: StartProgress) throws(StoreError) {
        if let log = progress.answerLog, !progress.answered.isEmpty {
            try txn.put(databases.events, EventRecordKey.answerSegment(eventKey: progress.eventKey, topic: progress.topic, number: log.segment),
                        AnswerLog.encode(progress.answered))
        }
        try dropAnswerSegments(eventKey: progress.eventKey, topic: progress.topic, below: progress.answerLog?.firstKept ?? .max)
        try txn.put(databases.events, progress.key, progress.encoded)
    }

    /// Removes the start record's answer segments numbered below `limit`.
    private func dropAnswerSegments(eventKey: String, topic: String, below limit: UInt32) throws(StoreError) {
        let prefix = EventRecordKey.answerSegments(eventKey: eventKey, topic: topic)
        let keys = try txn.withCursor(databases.events) { cursor throws(StoreError) in
            var keys: [[UInt8]] = []
            var position = try cursor.get(MDB_SET_RANGE, key: prefix)
            while let (key, _) = position, key.count == prefix.count + 4, key.starts(with: prefix) {
                let number = key[prefix.count...].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
                guard number < limit else { break }
                keys.append(Array(key))
                position = try cursor.get(MDB_NEXT)
            }
            return keys
        }
        for key in keys { try txn.delete(databases.events, key) }
    }

    func sweep(now: UInt64, installationMaxAge: UInt64) throws(StoreError) -> SweepCounts {
        var counts = SweepCounts()
        var expiredInstallations: [String] = []
        try forEachRecord(databases.installations) { key, value throws(StoreError) in
            let id = StoreKeys.installationID(key)
            let installation = try Installation(id: id, decoding: value)
            if installation.tokens.isEmpty || installation.updatedAt &+ installationMaxAge < now {
                expiredInstallations.append(id)
            }
        }
        for id in expiredInstallations { try removeInstallation(id) }
        counts.installations = expiredInstallations.count

        var expiredActivities: [String] = []
        try forEachRecord(databases.activities) { key, value throws(StoreError) in
            let activity = try ActivityRecord(id: String(decoding: key, as: UTF8.self), decoding: value)
            if activity.expiresAt <= now { expiredActivities.append(activity.id) }
        }
        for id in expiredActivities { try removeActivity(id) }
        counts.activities = expiredActivities.count

        var expiredEvents: [[UInt8]] = []
        var expiredStarts: [(eventKey: String, topic: String)] = []
        try forEachRecord(databases.events) { key, value throws(StoreError) in
            let record = try EventStoreRecord(key: key, value: value)
            guard let updatedAt = record.updatedAt, updatedAt &+ EventStoreRecord.retentionMilliseconds < now else { return }
            expiredEvents.append(Array(key))
            if case let .start(progress) = record { expiredStarts.append((progress.eventKey, progress.topic)) }
        }
        for key in expiredEvents { try txn.delete(databases.events, key) }
        // A start record's answer segments go with it.
        for start in expiredStarts { try dropAnswerSegments(eventKey: start.eventKey, topic: start.topic, below: .max) }
        counts.events = expiredEvents.count
        return counts
    }

    private func forEachRecord(_ dbi: MDB_dbi, _ body: (UnsafeRawBufferPointer, UnsafeRawBufferPointer) throws(StoreError) -> Void) throws(StoreError) {
        try txn.withCursor(dbi) { cursor throws(StoreError) in
            var position = try cursor.get(MDB_FIRST)
            while let (key, value) = position {
                try body(key, value)
                position = try cursor.get(MDB_NEXT)
            }
        }
    }
}

import APNs
import CLMDB
import Glibc

/// What `sokuho tokens stats` shows: counts per app, environment, kind and topic, and how much
/// of the file and map is used.
public struct StoreStatistics: Sendable, Equatable {
    public struct TokenCount: Sendable, Equatable {
        public let app: String
        public let environment: Environment
        public let kind: TokenKind
        public let count: Int
    }

    public struct TopicCount: Sendable, Equatable {
        public let app: String
        public let environment: Environment
        public let topic: String
        /// Tokens listed under the topic (of any kind and minimum level).
        public let count: Int
    }

    public let schemaVersion: UInt32
    public let installations: Int
    public let tokens: [TokenCount]
    public let topics: [TopicCount]
    public let activities: Int
    public let channels: Int
    public let events: Int
    /// Size of `data.mdb` on disk (allocated blocks), bytes.
    public let fileBytes: Int
    /// Bytes of the map holding data, and the map's size.
    public let usedBytes: Int
    public let mapBytes: Int

    public var totalTokens: Int { tokens.reduce(0) { $0 + $1.count } }
}

extension TokenStore {
    /// Counts everything in one read transaction (a scan of the token and topic keys).
    public func statistics() throws(StoreError) -> StoreStatistics {
        let counts = try read { txn throws(StoreError) in
            let tokens = try countTokens(txn)
            let topics = try countTopics(txn)
            return (try StoreSchema.storedVersion(txn, meta: databases.meta), try txn.count(databases.installations), tokens, topics,
                    try txn.count(databases.activities), try txn.count(databases.channels), try txn.count(databases.events))
        }
        // Map use is read from LMDB's meta pages: under the guard, as another thread may be remapping.
        let (usedBytes, mapBytes) = try mapGuard.shared { () throws(StoreError) in (environment.usedBytes, environment.mapSize) }
        var status = stat()
        let fileBytes = stat(directory + "/data.mdb", &status) == 0 ? Int(status.st_blocks) * 512 : 0
        return StoreStatistics(schemaVersion: counts.0, installations: counts.1, tokens: counts.2, topics: counts.3,
                               activities: counts.4, channels: counts.5, events: counts.6,
                               fileBytes: fileBytes, usedBytes: usedBytes, mapBytes: mapBytes)
    }

    /// Tokens per (app, environment, kind): the key prefix up to the kind byte names the group.
    private func countTokens(_ txn: borrowing LMDBTransaction) throws(StoreError) -> [StoreStatistics.TokenCount] {
        var result: [StoreStatistics.TokenCount] = []
        var group: [UInt8] = []
        var count = 0
        func flush() {
            guard count > 0, let parts = group.withUnsafeBytes({ StoreKeys.parseToken($0) }) else { return }
            result.append(.init(app: parts.app, environment: parts.environment, kind: parts.kind, count: count))
        }
        try txn.withCursor(databases.tokens) { cursor throws(StoreError) in
            var position = try cursor.get(MDB_FIRST)
            while let (key, _) = position {
                guard let nul = key.firstIndex(of: 0), key.count > nul + 2 else {
                    throw StoreError.corrupt(path: directory, detail: "a token key is malformed")
                }
                let groupLength = nul + 3
                if group.count != groupLength || !group.withUnsafeBytes({ memcmp($0.baseAddress!, key.baseAddress!, groupLength) == 0 }) {
                    flush()
                    group = Array(key[..<groupLength])
                    count = 0
                }
                count += 1
                position = try cursor.get(MDB_NEXT)
            }
        }
        flush()
        return result
    }

    /// Tokens per topic: one duplicate count per key, summed over the token-length keys.
    private func countTopics(_ txn: borrowing LMDBTransaction) throws(StoreError) -> [StoreStatistics.TopicCount] {
        var result: [StoreStatistics.TopicCount] = []
        try txn.withCursor(databases.topics) { cursor throws(StoreError) in
            var position = try cursor.get(MDB_FIRST)
            while let (key, _) = position {
                guard let parts = StoreKeys.parseTopic(key) else {
                    throw StoreError.corrupt(path: directory, detail: "a topic key is malformed")
                }
                let count = try cursor.duplicateCount()
                if let last = result.last, last.app == parts.app, last.environment == parts.environment, last.topic == parts.topic {
                    result[result.count - 1] = .init(app: last.app, environment: last.environment, topic: last.topic, count: last.count + count)
                } else {
                    result.append(.init(app: parts.app, environment: parts.environment, topic: parts.topic, count: count))
                }
                position = try cursor.get(MDB_NEXT_NODUP)
            }
        }
        return result
    }
}

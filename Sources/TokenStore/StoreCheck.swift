import CLMDB
import Vocabulary

/// The result of `TokenStore.check()`: counts, and every inconsistency found (the first 20).
public struct StoreCheckReport: Sendable, Equatable {
    public let schemaVersion: UInt32
    public let installations: Int
    public let tokens: Int
    public let topicEntries: Int
    public let problems: [String]
    /// Problems beyond the listed ones.
    public let moreProblems: Int
    /// Installations whose id the HTTP API cannot address (`StoreLimits.isAddressableInstallationID`):
    /// stored before the API refused such ids, or imported. Not a problem — the store is consistent
    /// and their tokens still get pushes — but the phone can never update or delete them.
    public let unaddressableInstallations: Int
    /// The first `listedUnaddressable` of them, in key order.
    public let unaddressableInstallationIDs: [String]

    /// How many unaddressable ids a report lists: enough to act on, bounded for a store full of them.
    public static let listedUnaddressable = 20

    public var isConsistent: Bool { problems.isEmpty }
}

extension TokenStore {
    /// Reads every page of every database and checks that the indexes agree with the
    /// installation records: each token is in `tokens` (owned by its installation) and under each
    /// of its topics with the installation's broadcast flag, and no index entry is left over. LMDB reports damaged pages as errors.
    public func check() throws(StoreError) -> StoreCheckReport {
        try read { txn throws(StoreError) in
            var problems: [String] = []
            var more = 0
            func problem(_ text: String) {
                if problems.count < 20 { problems.append(text) } else { more += 1 }
            }
            let version = try StoreSchema.storedVersion(txn, meta: databases.meta)
            var installations = 0
            var unaddressable = 0
            var unaddressableIDs: [String] = []
            var expectedTokens = 0
            var expectedTopicEntries = 0
            try txn.withCursor(databases.installations) { cursor throws(StoreError) in
                try txn.withCursor(databases.topics) { topicCursor throws(StoreError) in
                    var position = try cursor.get(MDB_FIRST)
                    while let (key, value) = position {
                        let id = StoreKeys.installationID(key)
                        installations += 1
                        // Judged by the key alone, so a record that does not decode is still listed.
                        if !StoreLimits.isAddressableInstallationID(id) {
                            unaddressable += 1
                            if unaddressableIDs.count < StoreCheckReport.listedUnaddressable { unaddressableIDs.append(id) }
                        }
                        let installation: Installation
                        do throws(StoreError) { installation = try Installation(id: id, decoding: value) } catch {
                            problem(error.located(at: directory).description)
                            position = try cursor.get(MDB_NEXT)
                            continue
                        }
                        for (kind, token) in installation.tokens {
                            // Built only for a problem: a check of a million tokens formats no text.
                            func subject() -> String { "the \(kind.name) token …\(TokenStore.tail(token)) of installation '\(id)'" }
                            expectedTokens += 1
                            let tokenKey = StoreKeys.token(app: installation.app, environment: installation.environment, kind: kind, token: token)
                            if let entry = try txn.get(databases.tokens, tokenKey) {
                                if try StoreKeys.parseTokenValue(entry).installationID != id {
                                    problem("\(subject()) is owned by another installation")
                                }
                            } else {
                                problem("\(subject()) is missing from the token index")
                            }
                            for topic in installation.topics(kind) {
                                expectedTopicEntries += 1
                                let topicKey = StoreKeys.topic(app: installation.app, environment: installation.environment,
                                                               topic: topic.name, tokenLength: token.count)
                                let entry = StoreKeys.topicEntry(minLevel: topic.minLevel, kind: kind, broadcast: installation.broadcast, token: token)
                                if try topicCursor.get(MDB_GET_BOTH, key: topicKey, value: entry) == nil {
                                    // The same entry with the other flag: the record changed, the index did not.
                                    let stale = StoreKeys.topicEntry(minLevel: topic.minLevel, kind: kind, broadcast: !installation.broadcast, token: token)
                                    if try topicCursor.get(MDB_GET_BOTH, key: topicKey, value: stale) != nil {
                                        problem("\(subject()) has broadcast \(!installation.broadcast) in topic '\(topic.name)', its installation says \(installation.broadcast)")
                                    } else {
                                        problem("\(subject()) is missing from topic '\(topic.name)'")
                                    }
                                }
                            }
                        }
                        position = try cursor.get(MDB_NEXT)
                    }
                }
            }
            let tokens = try txn.count(databases.tokens)
            let topicEntries = try txn.count(databases.topics)
            if tokens != expectedTokens {
                problem("the token index has \(tokens) entries, the installations hold \(expectedTokens) tokens")
            }
            if topicEntries != expectedTopicEntries {
                problem("the topic index has \(topicEntries) entries, the installations' topics need \(expectedTopicEntries)")
            }
            let activities = try txn.count(databases.activities)
            let activityIndex = try txn.count(databases.activityEvents)
            if activities != activityIndex {
                problem("the activity index has \(activityIndex) entries for \(activities) activities")
            }
            for (name, dbi) in [("activity", databases.activities), ("channel", databases.channels), ("event", databases.events)] {
                try txn.withCursor(dbi) { records throws(StoreError) in
                    var record = try records.get(MDB_FIRST)
                    while let (key, value) = record {
                        do throws(StoreError) {
                            switch name {
                            case "activity": _ = try ActivityRecord(id: String(decoding: key, as: UTF8.self), decoding: value)
                            case "channel":
                                guard let parts = StoreKeys.parseChannel(key) else { throw StoreError.corrupt(path: directory, detail: "a channel key is malformed") }
                                _ = try ChannelRecord(app: parts.app, environment: parts.environment, name: parts.name, decoding: value)
                            default: _ = try EventStoreRecord(key: key, value: value)
                            }
                        } catch {
                            problem(error.located(at: directory).description)
                        }
                        record = try records.get(MDB_NEXT)
                    }
                }
            }
            return StoreCheckReport(schemaVersion: version, installations: installations, tokens: tokens,
                                    topicEntries: topicEntries, problems: problems, moreProblems: more,
                                    unaddressableInstallations: unaddressable, unaddressableInstallationIDs: unaddressableIDs)
        }
    }

    /// The last 8 hex digits of a token: enough to find it, never the whole token in a message.
    public static func tail(_ token: [UInt8]) -> String {
        Hex.encode(token.suffix(4))
    }
}

import APNs
import CLMDB
import Glibc

/// Applies write operations inside one write transaction and keeps the indexes in step with the
/// installation records: every token of an installation is in `tokens` (→ owner, registered-at)
/// and under each topic its kind follows in `topics`. Only the writer thread uses it.
struct RegistryUpdate: ~Copyable {
    /// Owned: dropping the update (a thrown error) aborts the transaction; `commit` ends it.
    let txn: LMDBTransaction
    let databases: StoreDatabases

    /// Commits everything applied so far.
    consuming func commit() throws(StoreError) { try txn.commit() }

    func apply(_ operation: WriteOperation) throws(StoreError) -> WriteOutcome {
        switch operation {
        case let .register(registration, now):
            try register(registration, now: now)
        case let .registerBatch(batch):
            try register(batch)
        case let .removeToken(app, environment, kind, token, registeredBefore):
            return .tokenRemoved(try removeToken(app: app, environment: environment, kind: kind, token: token,
                                                 registeredBefore: registeredBefore))
        case let .removeInstallation(id):
            try removeInstallation(id)
        case let .putActivity(activity):
            try removeActivity(activity.id)
            try txn.put(databases.activities, Array(activity.id.utf8), activity.encoded)
            try txn.put(databases.activityEvents, Array(activity.eventKey.utf8), Array(activity.id.utf8), flags: MDB_NODUPDATA)
        case let .removeActivity(id):
            try removeActivity(id)
        case let .putChannel(channel):
            try txn.put(databases.channels, channel.key, channel.encoded)
        case let .removeChannel(app, environment, name):
            try txn.delete(databases.channels, StoreKeys.channel(app: app, environment: environment, name: name))
        case let .putEventSerial(record):
            try txn.put(databases.events, record.key, record.encoded)
        case let .putStartProgress(progress):
            try putStartProgress(progress)
        case let .putUpdateAnswers(answers):
            try txn.put(databases.events, answers.key, answers.encoded)
        case let .removeUpdateAnswers(eventKey, serial):
            try removeEventRecords(prefix: EventRecordKey.updateAnswers(eventKey: eventKey, serial: serial))
        case let .removeEvent(eventKey):
            try removeEvent(eventKey)
        case let .sweepExpired(now, maxAge):
            return .swept(try sweep(now: now, installationMaxAge: maxAge))
        }
        return .done
    }

    /// Applies a whole batch. Runs of registrations (an import) go through `registerRun`.
    func apply(batch operations: [WriteOperation]) throws(StoreError) -> [WriteOutcome] {
        var outcomes: [WriteOutcome] = []
        outcomes.reserveCapacity(operations.count)
        var index = 0
        while index < operations.count {
            var end = index
            while end < operations.count, case .register = operations[end] { end += 1 }
            if end - index >= RegistryUpdate.minimumSortedRun {
                try registerRun(operations[index..<end])
                outcomes.append(contentsOf: repeatElement(.done, count: end - index))
                index = end
            } else {
                outcomes.append(try apply(operations[index]))
                index += 1
            }
        }
        return outcomes
    }

    /// Runs shorter than this are applied one by one.
    static let minimumSortedRun = 64

    /// Applies many registrations database by database, each in key order: sorted inserts touch
    /// each B-tree page once while it is in cache, where input order would jump across the
    /// whole tree for every line. See `RegistrationBatch`.
    private func registerRun(_ run: ArraySlice<WriteOperation>) throws(StoreError) {
        var registrations: [TokenRegistration] = []
        var times: [UInt64] = []
        registrations.reserveCapacity(run.count)
        times.reserveCapacity(run.count)
        for operation in run {
            guard case let .register(registration, now) = operation else { continue }
            registrations.append(registration)
            times.append(now)
        }
        try register(RegistrationBatch(validated: registrations, times: times))
    }

    private func register(_ batch: RegistrationBatch) throws(StoreError) {
        for round in 0..<batch.roundCount { try register(batch, round: round) }
    }

    private func register(_ batch: RegistrationBatch, round: Int) throws(StoreError) {
        // 1. Installations in key order; existing ones take the general path.
        var isFresh = [Bool](repeating: false, count: batch.count)
        for index in batch.byID where batch.rounds[index] == round {
            if try txn.insert(databases.installations, Array(batch.ids.key(index)), Array(batch.freshRecords.key(index))) == nil {
                isFresh[index] = true
            } else {
                try register(batch.registrations[index], now: batch.times[index])
            }
        }
        // 2. Tokens of the new installations in key order.
        for index in batch.byToken where isFresh[index] {
            let registration = batch.registrations[index]
            try claimToken(key: Array(batch.tokenKeys.key(index)), kind: registration.kind, token: registration.token,
                           installationID: registration.installationID, registeredAt: registration.registeredAt,
                           now: batch.times[index])
        }
        // 3. Their topic entries in (key, duplicate) order.
        for index in batch.byTopicEntry where isFresh[batch.topicOwners[index]] {
            let both = batch.topicEntries.key(index)
            let split = both.startIndex + batch.topicKeyLengths[index]
            try txn.put(databases.topics, Array(both[..<split]), Array(both[split...]), flags: MDB_NODUPDATA)
        }
    }

    func installation(_ id: String) throws(StoreError) -> Installation? {
        guard let bytes = try txn.get(databases.installations, StoreKeys.installation(id)) else { return nil }
        return try Installation(id: id, decoding: bytes)
    }

    func save(_ installation: Installation) throws(StoreError) {
        try txn.put(databases.installations, StoreKeys.installation(installation.id), installation.encoded)
    }

    /// The `topics` entries (key, duplicate) of one token of `installation`.
    func topicEntries(_ installation: Installation, kind: TokenKind, token: [UInt8]) -> [(key: [UInt8], entry: [UInt8])] {
        installation.topics(kind).map { topic in
            (StoreKeys.topic(app: installation.app, environment: installation.environment, topic: topic.name, tokenLength: token.count),
             StoreKeys.topicEntry(minLevel: topic.minLevel, kind: kind, broadcast: installation.broadcast, token: token))
        }
    }

    private func allTopicEntries(_ installation: Installation) -> [(key: [UInt8], entry: [UInt8])] {
        installation.tokens.flatMap { topicEntries(installation, kind: $0.kind, token: $0.token) }
    }

    func tokenKey(_ installation: Installation, _ kind: TokenKind, _ token: [UInt8]) -> [UInt8] {
        StoreKeys.token(app: installation.app, environment: installation.environment, kind: kind, token: token)
    }

    /// Sets the registration's token and that token's topics (the other kind's are untouched). Written for the common case, a new installation
    /// with a new token: then it costs one insert per database (`insert` fails over to the
    /// update path when the key exists).
    private func register(_ registration: TokenRegistration, now: UInt64) throws(StoreError) {
        let idKey = StoreKeys.installation(registration.installationID)
        var new = registration.freshInstallation(at: now)
        var old: Installation?
        if let existing = try txn.insert(databases.installations, idKey, new.encoded) {
            let previous = try Installation(id: registration.installationID, decoding: existing)
            try previous.checkPlatform(accepting: registration.kind)
            old = previous
            new = previous
            new.app = registration.app
            new.environment = registration.environment
            new.setToken(registration.token, kind: registration.kind)
            new.setTopics(registration.topics, kind: registration.kind)
            new.updatedAt = now
            if let secretHash = registration.secretHash { new.secretHash = secretHash }
            if let broadcast = registration.broadcast { new.broadcast = broadcast }
            try save(new)
        }
        try claimToken(of: new, kind: registration.kind, registeredAt: registration.registeredAt, now: now)

        // A repeated registration (a daily re-sync) changes no index entry but registered-at.
        if let old, old.app == new.app, old.environment == new.environment, old.topics(registration.kind) == new.topics(registration.kind),
           old.token(registration.kind) == registration.token, old.broadcast == new.broadcast {
            return
        }

        // Rotation, topic, app, environment and broadcast changes: drop the old entries the new
        // record no longer has (a broadcast change alters every entry's kind byte, so both
        // kinds' entries are re-indexed); the other kind's token moves along if the app or
        // environment changed.
        if let old {
            let newTokenKeys = new.tokens.map { tokenKey(new, $0.kind, $0.token) }
            // A token moving to another app or environment was not registered again: it keeps its time.
            var movedTimes: [TokenKind: UInt64] = [:]
            for (kind, token) in old.tokens {
                let oldKey = tokenKey(old, kind, token)
                guard !newTokenKeys.contains(oldKey) else { continue }
                if let value = try txn.get(databases.tokens, oldKey) {
                    let (registeredAt, owner) = try StoreKeys.parseTokenValue(value)
                    if owner == old.id { movedTimes[kind] = registeredAt }
                }
                try txn.delete(databases.tokens, oldKey)
            }
            let newEntries = allTopicEntries(new)
            for (topicKey, entry) in allTopicEntries(old) where !newEntries.contains(where: { $0.key == topicKey && $0.entry == entry }) {
                try txn.delete(databases.topics, topicKey, value: entry)
            }
            for (kind, _) in new.tokens where kind != registration.kind && (old.app != new.app || old.environment != new.environment) {
                try claimToken(of: new, kind: kind, registeredAt: movedTimes[kind], now: now)
            }
        }
        for (topicKey, entry) in allTopicEntries(new) {
            try txn.put(databases.topics, topicKey, entry, flags: MDB_NODUPDATA)
        }
    }

    /// Points the `tokens` entry of the installation's token of `kind` at it: see the other `claimToken`.
    private func claimToken(of installation: Installation, kind: TokenKind, registeredAt: UInt64?, now: UInt64) throws(StoreError) {
        guard let token = installation.token(kind) else { return }
        try claimToken(key: tokenKey(installation, kind, token), kind: kind, token: token, installationID: installation.id,
                       registeredAt: registeredAt, now: now)
    }

    /// Records the token as registered at `registeredAt` when the registration says when (the
    /// phone registering, or an import line carrying the time: a token registered after a 410 is
    /// alive again). Without it, a token already in the index keeps its stored time and a new one
    /// gets `now`: a re-sync that does not know when the phone registered must not make a dead
    /// token look freshly registered, or 410 pruning would never remove it.
    /// A token belongs to one installation: a reinstall that got the same token takes it over.
    private func claimToken(key: [UInt8], kind: TokenKind, token: [UInt8], installationID: String,
                            registeredAt: UInt64?, now: UInt64) throws(StoreError) {
        guard let existing = try txn.insert(databases.tokens, key, StoreKeys.tokenValue(registeredAt: registeredAt ?? now, installationID: installationID)) else {
            return
        }
        let (storedAt, owner) = try StoreKeys.parseTokenValue(existing)
        let time = registeredAt ?? storedAt
        if owner == installationID && time == storedAt { return }
        if owner != installationID, let previous = try self.installation(owner), previous.token(kind) == token {
            try dropToken(of: previous, kind: kind)
        }
        try txn.put(databases.tokens, key, StoreKeys.tokenValue(registeredAt: time, installationID: installationID))
    }
}

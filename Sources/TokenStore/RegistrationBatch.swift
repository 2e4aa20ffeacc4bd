/// Many registrations made ready for one sorted write: validated, with their keys, records and
/// topic entries encoded and sorted in LMDB key order. An import prepares each chunk on its
/// parsing thread (`WriteOperation.registerBatch`), so the one writer thread only inserts.
///
/// Registrations that share neither an installation nor a token commute, so they may be applied
/// in any order. Those that do share one keep their input order through rounds: a registration
/// goes into the round after the last earlier one it shares an installation or a token with
/// (an installation's push-to-start and device lines: rounds 0 and 1). Each round is applied in
/// key order, the rounds one after another.
public struct RegistrationBatch: Sendable {
    let registrations: [TokenRegistration]
    let times: [UInt64]
    let ids: KeyArena
    let byID: [Int]
    let tokenKeys: KeyArena
    let byToken: [Int]
    /// The encoded record each registration creates if its installation is new.
    let freshRecords: KeyArena
    /// Topic key + duplicate of each registration's token under each of its topics.
    let topicEntries: KeyArena
    let topicKeyLengths: [Int]
    let topicOwners: [Int]
    let byTopicEntry: [Int]
    /// The round of each registration, and how many rounds there are.
    let rounds: [Int]
    let roundCount: Int

    public var count: Int { registrations.count }

    /// Prepares registrations all made at `now` (ms). Throws for the first invalid one.
    public init(_ registrations: [TokenRegistration], at now: UInt64) throws(StoreError) {
        for registration in registrations { try registration.validate() }
        self.init(validated: registrations, times: Array(repeating: now, count: registrations.count))
    }

    init(validated registrations: [TokenRegistration], times: [UInt64]) {
        self.registrations = registrations
        self.times = times
        var ids = KeyArena(capacity: registrations.count, averageKeyLength: 17)
        var tokenKeys = KeyArena(capacity: registrations.count, averageKeyLength: 56)
        var records = KeyArena(capacity: registrations.count, averageKeyLength: 100)
        var entries = KeyArena(capacity: registrations.count, averageKeyLength: 64)
        var keyLengths: [Int] = []
        var owners: [Int] = []
        keyLengths.reserveCapacity(registrations.count)
        owners.reserveCapacity(registrations.count)
        for (index, registration) in registrations.enumerated() {
            ids.append(StoreKeys.installation(registration.installationID))
            tokenKeys.append(StoreKeys.token(app: registration.app, environment: registration.environment,
                                             kind: registration.kind, token: registration.token))
            records.append(registration.freshInstallation(at: times[index]).encoded)
            for topic in registration.topics {
                let key = StoreKeys.topic(app: registration.app, environment: registration.environment,
                                          topic: topic.name, tokenLength: registration.token.count)
                // Topic keys are prefix-free (they end in NUL + length): ordering the
                // concatenation orders by key, then duplicate.
                entries.append(key, StoreKeys.topicEntry(minLevel: topic.minLevel, kind: registration.kind,
                                                              broadcast: registration.broadcast ?? false, token: registration.token))
                keyLengths.append(key.count)
                owners.append(index)
            }
        }
        self.ids = ids
        self.tokenKeys = tokenKeys
        byID = ids.sortedIndices()
        byToken = tokenKeys.sortedIndices()
        freshRecords = records
        topicEntries = entries
        topicKeyLengths = keyLengths
        topicOwners = owners
        byTopicEntry = entries.sortedIndices()
        (rounds, roundCount) = RegistrationBatch.rounds(idGroups: ids.groups(in: byID), tokenGroups: tokenKeys.groups(in: byToken))
    }

    /// Greedy rounds in input order: one past the latest round of an earlier registration with the
    /// same installation or token.
    static func rounds(idGroups: [Int], tokenGroups: [Int]) -> (rounds: [Int], count: Int) {
        var lastOfID = [Int](repeating: -1, count: (idGroups.max() ?? -1) + 1)
        var lastOfToken = [Int](repeating: -1, count: (tokenGroups.max() ?? -1) + 1)
        var rounds = [Int](repeating: 0, count: idGroups.count)
        var count = 0
        for index in idGroups.indices {
            let round = max(lastOfID[idGroups[index]], lastOfToken[tokenGroups[index]]) + 1
            rounds[index] = round
            lastOfID[idGroups[index]] = round
            lastOfToken[tokenGroups[index]] = round
            count = max(count, round + 1)
        }
        return (rounds, count)
    }
}

extension TokenRegistration {
    /// The record this registration creates when its installation is new (not broadcast-capable
    /// unless the registration says so).
    func freshInstallation(at now: UInt64) -> Installation {
        var installation = Installation(id: installationID, app: app, environment: environment, secretHash: secretHash ?? [],
                                        createdAt: now, updatedAt: now, broadcast: broadcast ?? false)
        installation.setToken(token, kind: kind)
        installation.setTopics(topics, kind: kind)
        return installation
    }
}

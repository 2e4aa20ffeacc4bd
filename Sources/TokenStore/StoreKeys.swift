import APNs
import Vocabulary
/// Key layouts of the databases. Names end with a NUL (names never contain one), so a prefix scan
/// of "region:30" never runs into "region:301"; numbers are big-endian so they sort numerically.
enum StoreKeys {
    /// `tokens`: app NUL environment kind token → registered-at (u64) + installation id.
    static func token(app: String, environment: Environment, kind: TokenKind, token: [UInt8]) -> [UInt8] {
        var key = [UInt8]()
        key.reserveCapacity(app.utf8.count + 3 + token.count)
        key.append(contentsOf: app.utf8)
        key.append(0)
        key.append(environment.storeByte)
        key.append(kind.rawValue)
        key.append(contentsOf: token)
        return key
    }

    /// The parts of a `tokens` key.
    static func parseToken(_ key: UnsafeRawBufferPointer) -> (app: String, environment: Environment, kind: TokenKind, token: [UInt8])? {
        guard let nul = key.firstIndex(of: 0), key.count > nul + 2,
              let environment = Environment(storeByte: key[nul + 1]),
              let kind = TokenKind(rawValue: key[nul + 2]) else { return nil }
        return (String(decoding: key[..<nul], as: UTF8.self), environment, kind, Array(key[(nul + 3)...]))
    }

    /// `topics` without the token length: app NUL environment topic NUL. Every key of one topic
    /// starts with this and adds one byte.
    static func topicPrefix(app: String, environment: Environment, topic: String) -> [UInt8] {
        var key = [UInt8]()
        key.reserveCapacity(app.utf8.count + topic.utf8.count + 4)
        key.append(contentsOf: app.utf8)
        key.append(0)
        key.append(environment.storeByte)
        key.append(contentsOf: topic.utf8)
        key.append(0)
        return key
    }

    /// `topics` (DUPSORT + DUPFIXED): topic prefix + token length → duplicates of `topicEntry`.
    /// The length is in the key because DUPFIXED needs equal-size duplicates per key.
    static func topic(app: String, environment: Environment, topic: String, tokenLength: Int) -> [UInt8] {
        topicPrefix(app: app, environment: environment, topic: topic) + [UInt8(tokenLength)]
    }

    /// The parts of a `topics` key.
    static func parseTopic(_ key: UnsafeRawBufferPointer) -> (app: String, environment: Environment, topic: String)? {
        guard let nul = key.firstIndex(of: 0), key.count > nul + 3, key[key.count - 2] == 0,
              let environment = Environment(storeByte: key[nul + 1]) else { return nil }
        return (String(decoding: key[..<nul], as: UTF8.self), environment,
                String(decoding: key[(nul + 2)..<(key.count - 2)], as: UTF8.self))
    }

    /// A duplicate under a topic key: min level, kind byte, token. Sorted by min level first, so
    /// the targets of an event of level L are a prefix of each key's duplicates. The kind byte is
    /// the token kind with `broadcastFlag` set when the installation is broadcast-capable: a
    /// fan-out learns that from the scan without reading the installation. Entries written before
    /// the flag existed read as not broadcast-capable, which is what their installations say.
    static func topicEntry(minLevel: UInt8, kind: TokenKind, broadcast: Bool, token: [UInt8]) -> [UInt8] {
        var entry = [UInt8]()
        entry.reserveCapacity(token.count + 2)
        entry.append(minLevel)
        entry.append(topicKindByte(kind, broadcast: broadcast))
        entry.append(contentsOf: token)
        return entry
    }

    /// Set in a topic entry's kind byte for an installation on iOS 18 or later.
    static let broadcastFlag: UInt8 = 0x80

    static func topicKindByte(_ kind: TokenKind, broadcast: Bool) -> UInt8 {
        kind.rawValue | (broadcast ? broadcastFlag : 0)
    }

    /// The kind and broadcast flag of a topic entry's kind byte; nil for an unknown kind.
    static func parseTopicKind(_ byte: UInt8) -> (kind: TokenKind, broadcast: Bool)? {
        TokenKind(rawValue: byte & ~broadcastFlag).map { ($0, byte & broadcastFlag != 0) }
    }

    /// `channels`: app NUL environment name.
    static func channel(app: String, environment: Environment, name: String) -> [UInt8] {
        var key = Array(app.utf8)
        key.append(0)
        key.append(environment.storeByte)
        key.append(contentsOf: name.utf8)
        return key
    }

    static func parseChannel(_ key: UnsafeRawBufferPointer) -> (app: String, environment: Environment, name: String)? {
        guard let nul = key.firstIndex(of: 0), key.count > nul + 1,
              let environment = Environment(storeByte: key[nul + 1]) else { return nil }
        return (String(decoding: key[..<nul], as: UTF8.self), environment, String(decoding: key[(nul + 2)...], as: UTF8.self))
    }

    /// The value of a `tokens` entry: registered-at (LEB128) + the owner's `installation` key.
    static func tokenValue(registeredAt: UInt64, installationID: String) -> [UInt8] {
        var writer = RecordWriter(capacity: 24)
        writer.varint(registeredAt)
        writer.bytes.append(contentsOf: installation(installationID))
        return writer.bytes
    }

    static func parseTokenValue(_ value: UnsafeRawBufferPointer) throws(StoreError) -> (registeredAt: UInt64, installationID: String) {
        var reader = RecordReader(value, what: "token entry")
        let registeredAt = try reader.varint()
        return (registeredAt, installationID(reader.rest()))
    }

    /// Leads the 16-byte form of a UUID id written in lowercase (`lowercaseUUID`) or uppercase
    /// hex. Ids are checked to hold no control character, so no other key starts with one.
    static let lowercaseUUID: UInt8 = 0x01
    static let uppercaseUUID: UInt8 = 0x02

    /// The `installations` key of an id (also the owner reference in a `tokens` value). A UUID
    /// in canonical form, all lowercase or all uppercase (iOS's `identifierForVendor`), is 17
    /// bytes (a case byte + its 16 bytes) instead of 36; any other id is its UTF-8 bytes.
    /// Lowercase UUIDs keep their order among themselves; they sort before other ids.
    static func installation(_ id: String) -> [UInt8] {
        if let key = id.utf8.withContiguousStorageIfAvailable({ compactUUID($0) }) { return key ?? Array(id.utf8) }
        let bytes = Array(id.utf8)
        return bytes.withUnsafeBufferPointer { compactUUID($0) } ?? bytes
    }

    private static func compactUUID(_ text: UnsafeBufferPointer<UInt8>) -> [UInt8]? {
        var key = [UInt8](repeating: 0, count: 17)
        switch key.withUnsafeMutableBytes({ UUIDText.parse(text, into: UnsafeMutableRawBufferPointer(rebasing: $0[1...])) }) {
        case nil, .mixed?: return nil // not a UUID; mixed case would not come back as written
        case .digitsOnly?, .lowercase?: key[0] = lowercaseUUID
        case .uppercase?: key[0] = uppercaseUUID
        }
        return key
    }

    /// The id of an `installations` key.
    static func installationID(_ key: UnsafeRawBufferPointer) -> String {
        guard key.count == 17, key[0] == lowercaseUUID || key[0] == uppercaseUUID else {
            return String(decoding: key, as: UTF8.self)
        }
        return UUIDText.format(key[1..<17], uppercase: key[0] == uppercaseUUID)
    }
}

import APNs
import CLMDB
import Glibc
@testable import TokenStore

/// A store in its own temporary directory (tests run in parallel), removed afterwards.
final class StoreFixture {
    let directory: String

    init() {
        var template = Array("/tmp/sokuho-store-test-XXXXXX".utf8CString)
        directory = template.withUnsafeMutableBufferPointer { String(cString: mkdtemp($0.baseAddress!)!) }
    }

    deinit { StoreFixture.remove(directory) }

    func open(_ options: TokenStore.Options = TokenStore.Options()) throws -> TokenStore {
        try TokenStore(directory: directory, options: options)
    }

    static func remove(_ path: String) {
        if let dir = opendir(path) {
            while let entry = readdir(dir) {
                let name = withUnsafeBytes(of: entry.pointee.d_name) { String(cString: $0.bindMemory(to: CChar.self).baseAddress!) }
                if name == "." || name == ".." { continue }
                let child = path + "/" + name
                if entry.pointee.d_type == UInt8(DT_DIR) { remove(child) } else { unlink(child) }
            }
            closedir(dir)
        }
        rmdir(path)
    }
}

/// A deterministic token: `seed` spread over `length` bytes.
func token(_ seed: Int, length: Int = 32) -> [UInt8] {
    (0..<length).map { UInt8(truncatingIfNeeded: seed &* 31 &+ $0 &* 7 &+ ($0 == 0 ? seed >> 8 : 0)) }
}

func registration(_ id: String, _ tokenBytes: [UInt8], kind: TokenKind = .pushToStart, app: String = "com.example.eew",
                  topics: [TopicSubscription] = [TopicSubscription(name: "region:301")], broadcast: Bool? = nil) -> TokenRegistration {
    TokenRegistration(installationID: id, app: app, environment: .sandbox, kind: kind, token: tokenBytes, topics: topics, broadcast: broadcast)
}

/// What a scan reports of one target.
struct ScannedTarget: Equatable, CustomStringConvertible {
    let token: [UInt8]
    let kind: TokenKind
    let minLevel: UInt8
    let broadcast: Bool
    var description: String { "\(kind.name) …\(TokenStore.tail(token)) level \(minLevel)\(broadcast ? " broadcast" : "")" }
}

extension TokenStore {
    /// Every target of a topic with what the scan says of it, in scan order, drained in batches of `batch`.
    func scannedTargets(_ topic: String, level: UInt8 = 255, kind: TokenKind? = nil, batch: Int = 1000,
                        after: TopicWatermark? = nil) throws -> [ScannedTarget] {
        let scan = scanTopic(app: "com.example.eew", environment: .sandbox, topic: topic, level: level, kind: kind, after: after, batch: batch)
        var result: [ScannedTarget] = []
        var targetBatch = TargetBatch()
        while try scan.next(into: &targetBatch) {
            for index in 0..<targetBatch.count {
                result.append(ScannedTarget(token: Array(targetBatch.token(at: index)), kind: targetBatch.kinds[index],
                                            minLevel: targetBatch.minLevels[index], broadcast: targetBatch.broadcast[index]))
            }
        }
        return result
    }

    /// The tokens of `scannedTargets`.
    func targets(_ topic: String, level: UInt8 = 255, kind: TokenKind? = nil, batch: Int = 1000,
                 after: TopicWatermark? = nil) throws -> [[UInt8]] {
        try scannedTargets(topic, level: level, kind: kind, batch: batch, after: after).map(\.token)
    }
}

/// Rewrites a store's installations and token entries as schema 4 wrote them (UTF-8 id keys,
/// record layout 3 with u64 times, token entries of u64 + UTF-8 owner id) and marks it schema 4:
/// where the migration tests start from.
func downgradeToSchema4(_ directory: String) throws {
    let environment = try LMDBEnvironment(directory: directory, mapSize: 1 << 24, readOnly: false)
    let txn = try environment.begin(readOnly: false)
    let installations = try txn.openDatabase("installations", flags: 0, create: false)!
    let tokens = try txn.openDatabase("tokens", flags: 0, create: false)!
    var records: [([UInt8], [UInt8])] = []
    var entries: [([UInt8], [UInt8])] = []
    try txn.withCursor(installations) { cursor throws(StoreError) in
        var position = try cursor.get(MDB_FIRST)
        while let (key, value) = position {
            let installation = try Installation(id: StoreKeys.installationID(key), decoding: value)
            var layout3 = RecordWriter()
            layout3.uint8(3)
            layout3.string(installation.app)
            layout3.uint8(installation.environment.storeByte)
            layout3.data(installation.secretHash)
            layout3.data(installation.pushToStartToken ?? [])
            layout3.data(installation.deviceToken ?? [])
            layout3.uint64(installation.createdAt)
            layout3.uint64(installation.updatedAt)
            for kind in TokenKind.apnsKinds {
                layout3.length(installation.topics(kind).count)
                for topic in installation.topics(kind) { layout3.string(topic.name); layout3.uint8(topic.minLevel) }
            }
            layout3.uint8(installation.broadcast ? 1 : 0)
            records.append((Array(installation.id.utf8), layout3.bytes))
            position = try cursor.get(MDB_NEXT)
        }
    }
    try txn.withCursor(tokens) { cursor throws(StoreError) in
        var position = try cursor.get(MDB_FIRST)
        while let (key, value) = position {
            let (registeredAt, owner) = try StoreKeys.parseTokenValue(value)
            var old = RecordWriter()
            old.uint64(registeredAt)
            entries.append((Array(key), old.bytes + Array(owner.utf8)))
            position = try cursor.get(MDB_NEXT)
        }
    }
    for (dbi, rewritten) in [(installations, records), (tokens, entries)] {
        try txn.removeAll(dbi)
        for (key, value) in rewritten { try txn.put(dbi, key, value) }
    }
    let meta = try txn.openDatabase("meta", flags: 0, create: false)!
    try txn.put(meta, StoreSchema.versionKey, [0, 0, 0, 4])
    try txn.commit()
}

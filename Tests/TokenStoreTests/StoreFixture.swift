import APNs
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

#if canImport(Glibc)
import Glibc
#endif
import APNs
import JSONCore
import Simulator
import SokuhoCLI
import TokenStore

/// One fan-out test: a store of phones, the simulator logging every push it accepts, event files,
/// and `sokuho fanout` run in-process. The test opens the store only between runs (one LMDB
/// environment per directory per process).
final class FanoutScenario {
    let directory = temporaryDirectory("sokuho-fanout")
    let running: RunningSimulator
    var store: String { directory + "/store" }
    var log: String { directory + "/accepted.jsonl" }

    init(_ configure: (inout SimulatorConfiguration) -> Void = { _ in }) throws {
        let log = directory + "/accepted.jsonl"
        running = try RunningSimulator { configuration in
            configuration.logPath = log
            configure(&configuration)
        }
    }

    deinit { running.simulator.stop() }

    /// A phone: its installation id, token (hex), region subscriptions and capabilities.
    struct Phone {
        var id: String
        var token: String
        var kind: TokenKind = .pushToStart
        var topics: [(String, UInt8)]
        var broadcast = false
    }

    /// A deterministic distinct 32-byte token.
    static func token(_ number: Int, prefix: String = "a0") -> String {
        let digits = String(number, radix: 16)
        return prefix + String(repeating: "0", count: 62 - digits.count) + digits
    }

    /// Registers `phones` in the scenario's store, or in the store at `path` (another node's).
    func register(_ phones: [Phone], environment: Environment = .production, into path: String? = nil, registeredAt: UInt64? = nil) throws {
        let tokenStore = try TokenStore(directory: path ?? store)
        defer { tokenStore.close() }
        try tokenStore.write(phones.map { phone in
            .register(TokenRegistration(installationID: phone.id, app: testBundle, environment: environment, kind: phone.kind,
                                        token: phone.kind == .fcm ? Array(phone.token.utf8) : Array(hex: phone.token), topics: phone.topics.map { TopicSubscription(name: $0.0, minLevel: $0.1) },
                                        registeredAt: registeredAt, broadcast: phone.kind == .fcm ? nil : phone.broadcast), at: 1_000)
        })
    }

    func withStore<T>(_ body: (TokenStore) throws -> T) throws -> T {
        let tokenStore = try TokenStore(directory: store)
        defer { tokenStore.close() }
        return try body(tokenStore)
    }

    /// Writes an event file and returns its path.
    func event(_ name: String, _ json: String) -> String { writeFile(directory, name, json) }

    /// The options that point `sokuho fanout` at the simulator.
    var connection: [String] {
        ["--store", store, "--host", "127.0.0.1:\(running.port)", "--manage-host", "127.0.0.1:\(running.managePort)",
         "--ca-file", running.certificates.ca, "--key", running.certificates.providerKey,
         "--team-id", SimulatorCertificates.teamID, "--key-id", SimulatorCertificates.keyID]
    }

    func fanout(_ eventPath: String, _ extra: [String] = []) -> CLIRun {
        sokuho(["fanout", eventPath, "--json"] + connection + extra)
    }

    /// The options that add the simulator's FCM side (its service account, the same port).
    var android: [String] {
        ["--service-account", running.simulator.fcmServiceAccountFile, "--fcm-host", "127.0.0.1:\(running.port)"]
    }

    /// An FCM registration token as Android issues them (about 160 characters), distinct per number.
    static func fcmToken(_ number: Int) -> String { "d\(number):APA91b" + String(repeating: "F", count: 150) }

    /// Accepted FCM messages by registration token, in order: each message's `message` object.
    func fcmMessages() -> [String: [JSONValue]] {
        var result: [String: [JSONValue]] = [:]
        for push in accepted() where push.path.hasPrefix("/v1/projects/") {
            guard let message = push.body["message"], let token = message["token"]?.stringValue else { continue }
            result[token, default: []].append(message)
        }
        return result
    }

    /// Every push the simulator accepted so far: path, headers, body.
    func accepted() -> [(path: String, headers: JSONValue, body: JSONValue)] {
        String(decoding: readFile(log), as: UTF8.self).split(separator: "\n").compactMap { line in
            guard let json = try? JSONParser.parse(String(line)), let path = json["path"]?.stringValue,
                  let headers = json["headers"], let body = json["body"] else { return nil }
            return (path, headers, body)
        }
    }

    /// Accepted device pushes by token (hex), in order.
    func devicePushes() -> [String: [(headers: JSONValue, body: JSONValue)]] {
        var result: [String: [(headers: JSONValue, body: JSONValue)]] = [:]
        for push in accepted() where push.path.hasPrefix("/3/device/") {
            result[String(push.path.dropFirst("/3/device/".count)), default: []].append((push.headers, push.body))
        }
        return result
    }

    /// Accepted broadcasts, by channel id.
    func broadcasts() -> [String: Int] {
        var result: [String: Int] = [:]
        for push in accepted() where push.path.hasPrefix("/4/broadcasts/") {
            result[push.headers["apns-channel-id"]?.stringValue ?? "", default: 0] += 1
        }
        return result
    }
}

extension Array where Element == UInt8 {
    init(hex: String) {
        var bytes: [UInt8] = []
        var index = hex.startIndex
        while index < hex.endIndex {
            let next = hex.index(index, offsetBy: 2)
            bytes.append(UInt8(hex[index..<next], radix: 16)!)
            index = next
        }
        self = bytes
    }
}

/// A start event's JSON with `groups` (topic, level, content) and overrides.
func startEvent(key: String = "eew-test", serial: Int = 1, groups: [(String, Int, String)], channel: String = "\"auto\"",
                extra: String = "") -> String {
    let groupText = groups.map { #"{"topic":"\#($0.0)","level":\#($0.1),"channel":\#(channel),"contentState":{"region":"\#($0.0)","text":"\#($0.2)"}}"# }
    return #"{"app":"\#(testBundle)","environment":"production","key":"\#(key)","serial":\#(serial),"kind":"start","deadlineSeconds":30,"attributesType":"EewAttributes","attributes":{"id":"\#(key)"},"alert":{"title":"Earthquake","body":"Strong shaking expected"},"inputPushToken":true\#(extra),"groups":[\#(groupText.joined(separator: ","))]}"#
}

/// An update or end event's JSON.
func followEvent(key: String = "eew-test", serial: Int, kind: String, groups: [(String, Int, String)], channel: String = "\"auto\"") -> String {
    let groupText = groups.map { #"{"topic":"\#($0.0)","level":\#($0.1),"channel":\#(channel),"contentState":{"region":"\#($0.0)","text":"\#($0.2)"}}"# }
    return #"{"app":"\#(testBundle)","environment":"production","key":"\#(key)","serial":\#(serial),"kind":"\#(kind)","deadlineSeconds":30,"groups":[\#(groupText.joined(separator: ","))]}"#
}

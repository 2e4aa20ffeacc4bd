import APNs
import TokenStore
import Vocabulary

/// `sokuho tokens generate`: a synthetic import file, so the token store benchmarks in the README
/// can be reproduced anywhere. Deterministic for a given `--seed`.
enum TokensGenerateCommand {
    static let spec = CommandSpec(
        "generate",
        summary: "write N synthetic registrations as JSON lines to stdout (for benchmarks and tests)",
        options: [
            OptionSpec("--count", value: "N", help: "how many lines (default 1000)"),
            OptionSpec("--topics", value: "K", help: "installations are spread over topics region:0 … region:K-1 (default 1)"),
            OptionSpec("--levels", value: "L", help: "minLevel is drawn from 0 … L-1 (default 1: all 0)"),
            OptionSpec("--app", value: "BUNDLE", help: "the app of every line (default com.example.eew)"),
            OptionSpec("--environment", value: "ENV", help: "production or sandbox (default sandbox)"),
            OptionSpec("--platform", value: "PLATFORM", help: "ios or android (default ios): android writes kind fcm lines with FCM-shaped tokens"),
            OptionSpec("--kind", value: "KIND", help: "pushToStart or device (default pushToStart; iOS only)"),
            OptionSpec("--seed", value: "S", help: "random seed (default 1); the same seed gives the same file"),
        ],
        details: """
        Each line has a random UUID-like installationId, a random 32-byte token and one topic.
        With --platform android each line is an Android installation's: kind fcm and a token shaped
        like the ones Firebase issues (152 to 163 characters: an instance id, ':', APA91b, a tail
        of A-Z a-z 0-9 _ -), written as text.
        Example (the import benchmark of \(InstalledDocumentation.section("Performance"))):
          sokuho tokens generate --count 1000000 --topics 1 > tokens.jsonl
          sokuho tokens import tokens.jsonl --store /tmp/bench-store
        """,
        run: { invocation throws(CLIError) in
            let count = try invocation.int("--count", in: 0...100_000_000) ?? 1000
            let topics = try invocation.int("--topics", in: 1...1_000_000) ?? 1
            let levels = try invocation.int("--levels", in: 1...256) ?? 1
            let seed = try invocation.int("--seed", in: 0...Int.max) ?? 1
            let app = invocation.string("--app") ?? "com.example.eew"
            let environment = Environment(rawValue: try invocation.choice("--environment", ["production", "sandbox"]) ?? "sandbox")!
            let platform = Platform(rawValue: try invocation.choice("--platform", Platform.allCases.map(\.rawValue)) ?? "ios")!
            let chosenKind = try invocation.choice("--kind", ["pushToStart", "device"])
            if platform == .android, chosenKind != nil {
                throw .usage("--kind is for iOS tokens; --platform android writes fcm tokens")
            }
            let kind = platform == .android ? TokenKind.fcm : TokenKind(name: chosenKind ?? "pushToStart")!
            var random = SplitMix64(seed: UInt64(seed))
            var buffer: [UInt8] = []
            buffer.reserveCapacity(1 << 20)
            for _ in 0..<count {
                let topic = Int(random.next() % UInt64(topics))
                let level = UInt8(random.next() % UInt64(levels))
                var token: [UInt8] = []
                if kind == .fcm {
                    token = fcmToken(&random)
                } else {
                    for _ in 0..<4 { withUnsafeBytes(of: random.next()) { token.append(contentsOf: $0) } }
                }
                var withToken = Installation(id: uuid(&random), app: app, environment: environment, createdAt: 0, updatedAt: 0)
                withToken.setToken(token, kind: kind)
                withToken.setTopics([TopicSubscription(name: "region:\(topic)", minLevel: level)], kind: kind)
                TokenLineWriter.append(withToken, kind: kind, registeredAt: nil, to: &buffer)
                if buffer.count >= 1 << 20 {
                    invocation.console.write(String(decoding: buffer, as: UTF8.self))
                    buffer.removeAll(keepingCapacity: true)
                }
            }
            invocation.console.write(String(decoding: buffer, as: UTF8.self))
            return .success
        })

    /// An FCM registration token's shape: a 22-character instance id, ':', `APA91b`, and a tail
    /// that makes it 152 to 163 characters, all of `[A-Za-z0-9_-]` but the colon (what Firebase
    /// SDKs hand apps today; Google documents no length, so the store takes 1...255).
    static func fcmToken(_ random: inout SplitMix64) -> [UInt8] {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
        let length = 152 + Int(random.next() % 12)
        var token: [UInt8] = []
        token.reserveCapacity(length)
        var bits = random.next(), left = 10
        func draw() -> UInt8 {
            if left == 0 { bits = random.next(); left = 10 }
            defer { bits >>= 6; left -= 1 }
            return alphabet[Int(bits & 63)]
        }
        for _ in 0..<22 { token.append(draw()) }
        token.append(contentsOf: ":APA91b".utf8)
        while token.count < length { token.append(draw()) }
        return token
    }

    /// A random UUID-shaped string (8-4-4-4-12 lowercase hex): two draws, big-endian, with no
    /// version bits set, so a seed gives the same ids as every earlier build.
    static func uuid(_ random: inout SplitMix64) -> String {
        let high = random.next(), low = random.next()
        let bytes = (0..<16).map { UInt8(truncatingIfNeeded: ($0 < 8 ? high : low) >> (56 - 8 * UInt64($0 % 8))) }
        return UUIDText.format(bytes)
    }
}

/// A tiny deterministic random generator (SplitMix64): the same seed gives the same file.
struct SplitMix64 {
    private var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9e3779b97f4a7c15
        var z = state
        z = (z ^ (z >> 30)) &* 0xbf58476d1ce4e5b9
        z = (z ^ (z >> 27)) &* 0x94d049bb133111eb
        return z ^ (z >> 31)
    }
}

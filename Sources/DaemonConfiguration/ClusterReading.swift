#if canImport(Glibc)
import Glibc
#endif
import APNs
import JSONCore

extension ServeConfiguration {
    /// Several nodes sharing registrations and events through Valkey/Redis Streams (the README's
    /// "Cluster"). Nil — no `cluster` section — means a single node: nothing connects to Redis.
    public struct Cluster: Sendable, Equatable {
        /// The Valkey or Redis (≥ 7) server every node of the cluster uses.
        public var redis: Endpoint
        /// A file holding the server's `requirepass` password (mode 0600), or nil for none.
        public var passwordFile: String?
        /// This node's name in the consumer group and in leases: unique per node, stable across
        /// restarts (a restarted node takes its own pending shards back at once). Default: the host name.
        public var node: String
        /// The shards each event is split into (token-hash ranges of each topic). Every node must
        /// use the same number: a shard's checkpoints are kept under its number.
        public var shards: Int = Cluster.defaultShards
        /// How long a shard's lease lasts without being extended. A node that dies (or loses Redis)
        /// holding a shard stops sending when its lease runs out; the others take the shard over then.
        public var claimAfter: Duration = Cluster.defaultClaimAfter
        /// The registration stream is trimmed to about this many entries (XADD MAXLEN ~).
        public var registrationStreamLength: Int = Cluster.defaultStreamLength

        public init(redis: Endpoint, node: String) {
            self.redis = redis
            self.node = node
        }

        public static let defaultShards = 8
        public static let defaultClaimAfter: Duration = .seconds(15)
        public static let defaultStreamLength = 1_000_000
        public static let shardsRange = 1...256
        public static let claimRange = 2...600
        public static let streamLengthRange = 1_000...100_000_000
    }
}

/// Reads the `cluster` section: from the file, or as JSON text from `--cluster` / `SOKUHO_CLUSTER`.
package enum ClusterReading {
    package static func cluster(_ input: SettingInput, field: String) throws(ConfigurationError) -> ServeConfiguration.Cluster? {
        let value = try SettingValue.json(input, field: field, expected: "a JSON object")
        if case .null = value { return nil }
        var draft = Draft()
        try JSONObjectFields.read(value, path: field, root: "configuration", what: "the cluster section", members: members, into: &draft)
        guard let redis = draft.redis else {
            throw ConfigurationError(field: field + ".redis", "is required: the Valkey/Redis server as HOST:PORT, e.g. \"10.0.0.5:6379\"")
        }
        let node: String
        if let named = draft.node { node = named } else { node = try hostName(field: field + ".node") }
        var cluster = ServeConfiguration.Cluster(redis: redis, node: node)
        cluster.passwordFile = draft.passwordFile
        cluster.shards = draft.shards
        cluster.claimAfter = draft.claimAfter
        cluster.registrationStreamLength = draft.streamLength
        return cluster
    }

    private struct Draft {
        var redis: Endpoint?
        var passwordFile: String?
        var node: String?
        var shards = ServeConfiguration.Cluster.defaultShards
        var claimAfter = ServeConfiguration.Cluster.defaultClaimAfter
        var streamLength = ServeConfiguration.Cluster.defaultStreamLength
    }

    private static let members: [JSONMember<Draft, ConfigurationError>] = [
        JSONMember("redis") { (value, field, draft) throws(ConfigurationError) in
            draft.redis = try SettingValue.endpoint(try SettingValue.string(.json(value), field: field, expected: "HOST:PORT"), field: field)
        },
        JSONMember("passwordFile") { (value, field, draft) throws(ConfigurationError) in draft.passwordFile = try SettingValue.path(.json(value), field: field) },
        JSONMember("node") { (value, field, draft) throws(ConfigurationError) in
            draft.node = try nodeName(try SettingValue.string(.json(value), field: field, expected: "this node's name"), field: field)
        },
        JSONMember("shards") { (value, field, draft) throws(ConfigurationError) in
            draft.shards = try SettingValue.integer(.json(value), field: field, in: ServeConfiguration.Cluster.shardsRange)
        },
        JSONMember("claimSeconds") { (value, field, draft) throws(ConfigurationError) in
            draft.claimAfter = try SettingValue.seconds(.json(value), field: field, in: ServeConfiguration.Cluster.claimRange)
        },
        JSONMember("registrationStreamLength") { (value, field, draft) throws(ConfigurationError) in
            draft.streamLength = try SettingValue.integer(.json(value), field: field, in: ServeConfiguration.Cluster.streamLengthRange)
        },
    ]

    /// 1–64 of A–Z a–z 0–9 . _ - : it is a consumer name and part of Redis keys and log lines.
    package static func nodeName(_ text: String, field: String) throws(ConfigurationError) -> String {
        let allowed = text.utf8.allSatisfy { byte in
            (0x30...0x39).contains(byte) || (0x41...0x5a).contains(byte) || (0x61...0x7a).contains(byte) || byte == 0x2e || byte == 0x5f || byte == 0x2d
        }
        guard (1...64).contains(text.utf8.count), allowed else {
            throw ConfigurationError(field: field, "must be 1–64 letters, digits, '.', '_' or '-' (e.g. \"pi-tokyo-1\"), not '\(text)'")
        }
        return text
    }

    /// The host name as the default node name.
    private static func hostName(field: String) throws(ConfigurationError) -> String {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count - 1) == 0 else {
            throw ConfigurationError(field: field, "is not given and the host name cannot be read; name this node, e.g. \"node\": \"pi-tokyo-1\"")
        }
        let name = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return try nodeName(name, field: field)
    }
}

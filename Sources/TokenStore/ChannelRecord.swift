import APNs
/// A broadcast channel (iOS 18+) Sokuho created for a group ("region:301", "election-2026"):
/// APNs knows it by `channelID`; Sokuho looks it up by the group's name.
public struct ChannelRecord: Sendable, Equatable {
    /// APNs' message storage policy for the channel.
    public enum StoragePolicy: UInt8, Sendable {
        case noMessageStored = 0
        case mostRecentMessageStored = 1
    }

    public var app: String
    public var environment: Environment
    public var name: String
    public var channelID: String
    public var storagePolicy: StoragePolicy

    public init(app: String, environment: Environment, name: String, channelID: String, storagePolicy: StoragePolicy) {
        self.app = app
        self.environment = environment
        self.name = name
        self.channelID = channelID
        self.storagePolicy = storagePolicy
    }

    func validate() throws(StoreError) {
        try StoreLimits.checkName(app, field: "app")
        try StoreLimits.checkName(name, field: "channel name")
        try StoreLimits.checkName(channelID, field: "channel id")
    }

    var key: [UInt8] { StoreKeys.channel(app: app, environment: environment, name: name) }

    var encoded: [UInt8] {
        var writer = RecordWriter()
        writer.string(channelID)
        writer.uint8(storagePolicy.rawValue)
        return writer.bytes
    }

    init(app: String, environment: Environment, name: String, decoding bytes: UnsafeRawBufferPointer) throws(StoreError) {
        var reader = RecordReader(bytes, what: "channel '\(name)'")
        self.app = app
        self.environment = environment
        self.name = name
        channelID = try reader.string()
        guard let policy = StoragePolicy(rawValue: try reader.uint8()) else {
            throw StoreError.corrupt(path: "", detail: "channel '\(name)' has an unknown storage policy")
        }
        storagePolicy = policy
    }
}

import APNs
/// One app install on one phone: its tokens, the topics each token follows and when it was last
/// heard from. Topics belong to a token kind (a registration of one kind replaces that kind's
/// topics only), so a device line cannot silently unsubscribe the push-to-start token.
/// An installation is of one `Platform`: an iOS one holds push-to-start and device tokens, an
/// Android one an FCM token only (`RegistryUpdate` refuses a registration that would mix them).
public struct Installation: Sendable, Equatable {
    public var id: String
    public var app: String
    public var environment: Environment
    /// SHA-256 of the secret the app uses to authenticate to the registration API (empty: none).
    public var secretHash: [UInt8]
    public var pushToStartToken: [UInt8]?
    public var deviceToken: [UInt8]?
    /// An Android phone's FCM registration token: its ASCII text's bytes (not hex).
    public var fcmToken: [UInt8]?
    /// The topics of each kind's token, in the order the app sent them.
    public var pushToStartTopics: [TopicSubscription]
    public var deviceTopics: [TopicSubscription]
    public var fcmTopics: [TopicSubscription]
    /// Milliseconds since 1970.
    public var createdAt: UInt64
    /// Milliseconds since 1970; an installation not refreshed for long is swept.
    public var updatedAt: UInt64
    /// The phone runs iOS 18 or later, so a push-to-start may carry `input-push-channel` (the
    /// activity then follows a broadcast channel): iOS 17 refuses such a start outright. Each of
    /// the installation's topic index entries carries it too, so a fan-out learns it from the scan.
    public var broadcast: Bool

    public init(id: String, app: String, environment: Environment, secretHash: [UInt8] = [],
                pushToStartToken: [UInt8]? = nil, deviceToken: [UInt8]? = nil,
                pushToStartTopics: [TopicSubscription] = [], deviceTopics: [TopicSubscription] = [],
                createdAt: UInt64, updatedAt: UInt64, broadcast: Bool = false,
                fcmToken: [UInt8]? = nil, fcmTopics: [TopicSubscription] = []) {
        self.id = id
        self.app = app
        self.environment = environment
        self.secretHash = secretHash
        self.pushToStartToken = pushToStartToken
        self.deviceToken = deviceToken
        self.pushToStartTopics = pushToStartTopics
        self.deviceTopics = deviceTopics
        self.fcmToken = fcmToken
        self.fcmTopics = fcmTopics
        self.createdAt = createdAt
        self.updatedAt = updatedAt
        self.broadcast = broadcast
    }

    /// The token of `kind`, if the installation has one.
    public func token(_ kind: TokenKind) -> [UInt8]? {
        switch kind {
        case .pushToStart: pushToStartToken
        case .device: deviceToken
        case .fcm: fcmToken
        }
    }

    public mutating func setToken(_ token: [UInt8]?, kind: TokenKind) {
        switch kind {
        case .pushToStart: pushToStartToken = token
        case .device: deviceToken = token
        case .fcm: fcmToken = token
        }
    }

    /// The topics the token of `kind` follows.
    public func topics(_ kind: TokenKind) -> [TopicSubscription] {
        switch kind {
        case .pushToStart: pushToStartTopics
        case .device: deviceTopics
        case .fcm: fcmTopics
        }
    }

    public mutating func setTopics(_ topics: [TopicSubscription], kind: TokenKind) {
        switch kind {
        case .pushToStart: pushToStartTopics = topics
        case .device: deviceTopics = topics
        case .fcm: fcmTopics = topics
        }
    }

    /// (kind, token) for each token it holds, in kind order (push-to-start first).
    public var tokens: [(kind: TokenKind, token: [UInt8])] {
        TokenKind.allCases.compactMap { kind in token(kind).map { (kind, $0) } }
    }

    /// The platform of the tokens it holds; nil while it holds none (every token was pruned: the
    /// sweep removes it), when a registration of either platform may take it.
    public var platform: Platform? {
        if fcmToken != nil { return .android }
        return pushToStartToken != nil || deviceToken != nil ? .ios : nil
    }

    /// 5 (schema 6): the FCM token and its topics after the broadcast byte (an iOS record
    /// writes them empty: two bytes).
    /// 4 (schema 5): the times are LEB128, `updatedAt` as its (wrapping) difference from
    /// `createdAt`: 7 bytes instead of 16 for a record that was never refreshed.
    /// 3: a broadcast byte (0 or 1) after the topics. 2: topics per token kind (push-to-start's,
    /// then device's). 1 had one list for both. Both are still read, as not broadcast-capable:
    /// no phone had said otherwise before layout 3, so schema 4 needs no rewrite. Layouts 1 to 4
    /// read with no FCM token, which no phone could have registered before layout 5.
    static let layoutVersion: UInt8 = 5

    var encoded: [UInt8] {
        var writer = RecordWriter(capacity: 128)
        writer.uint8(Installation.layoutVersion)
        writer.string(app)
        writer.uint8(environment.storeByte)
        writer.data(secretHash)
        writer.data(pushToStartToken ?? [])
        writer.data(deviceToken ?? [])
        writer.varint(createdAt)
        writer.varint(updatedAt &- createdAt)
        func write(_ topics: [TopicSubscription]) {
            writer.length(topics.count)
            for topic in topics {
                writer.string(topic.name)
                writer.uint8(topic.minLevel)
            }
        }
        // The order of layout 2 to 4, then what layout 5 appends: not `TokenKind.allCases`,
        // whose growth must not move fields of older layouts.
        write(pushToStartTopics)
        write(deviceTopics)
        writer.uint8(broadcast ? 1 : 0)
        writer.data(fcmToken ?? [])
        write(fcmTopics)
        return writer.bytes
    }

    init(id: String, decoding bytes: UnsafeRawBufferPointer) throws(StoreError) {
        var reader = RecordReader(bytes, what: "installation '\(id)'")
        let layout = try reader.uint8()
        guard (1...Installation.layoutVersion).contains(layout) else {
            throw StoreError.corrupt(path: "", detail: "installation '\(id)' has an unknown record layout")
        }
        self.id = id
        app = try reader.string()
        environment = try reader.environment()
        secretHash = try reader.data()
        let pushToStart = try reader.data()
        pushToStartToken = pushToStart.isEmpty ? nil : pushToStart
        let device = try reader.data()
        deviceToken = device.isEmpty ? nil : device
        if layout >= 4 {
            createdAt = try reader.varint()
            updatedAt = createdAt &+ (try reader.varint())
        } else {
            createdAt = try reader.uint64()
            updatedAt = try reader.uint64()
        }
        func readTopics() throws(StoreError) -> [TopicSubscription] {
            let count = try reader.length()
            var topics: [TopicSubscription] = []
            topics.reserveCapacity(count)
            for _ in 0..<count {
                let name = try reader.string()
                topics.append(TopicSubscription(name: name, minLevel: try reader.uint8()))
            }
            return topics
        }
        if layout == 1 {
            // One list every token followed: each token keeps following it.
            let shared = try readTopics()
            pushToStartTopics = pushToStartToken == nil ? [] : shared
            deviceTopics = deviceToken == nil ? [] : shared
        } else {
            pushToStartTopics = try readTopics()
            deviceTopics = try readTopics()
        }
        let broadcastByte = layout >= 3 ? try reader.uint8() : 0
        guard broadcastByte <= 1 else {
            throw StoreError.corrupt(path: "", detail: "installation '\(id)' has an unknown broadcast value")
        }
        broadcast = broadcastByte == 1
        if layout >= 5 {
            let fcm = try reader.data()
            fcmToken = fcm.isEmpty ? nil : fcm
            fcmTopics = try readTopics()
        } else {
            fcmToken = nil
            fcmTopics = []
        }
        guard reader.isAtEnd else { throw StoreError.corrupt(path: "", detail: "installation '\(id)' has trailing bytes") }
    }
}

/// The `reason` string of an APNs error (device push, broadcast and channel management; APNS.md §4
/// and §9.3). Matching ignores case, spaces, `-` and `_`, because APNs itself spells one reason
/// `Service Unavailable`; strings APNs may add later are kept as `.unknown`.
public enum Reason: Sendable, Hashable, CustomStringConvertible {
    // 400
    case badCollapseId, badDeviceToken, badExpirationDate, badMessageId, badPriority, badTopic
    case deviceTokenNotForTopic, duplicateHeaders, idleTimeout, invalidPushType, missingDeviceToken
    case missingTopic, payloadEmpty, topicDisallowed
    // 400, broadcast and channel management
    case featureNotEnabled, missingChannelId, badChannelId, channelNotRegistered, badRequestParams
    case badRequestPayload, missingPushType, cannotCreateChannelConfig
    // 403
    case badCertificate, badCertificateEnvironment, expiredProviderToken, forbidden, invalidProviderToken
    case missingProviderToken, unrelatedKeyIdInToken, badEnvironmentKeyIdInToken, topicMismatch
    // 404, 405, 410, 413, 429, 500, 503
    case badPath, methodNotAllowed, expiredToken, unregistered, payloadTooLarge
    case tooManyProviderTokenUpdates, tooManyRequests, internalServerError, serviceUnavailable, shutdown
    /// A reason this code does not know, exactly as received.
    case unknown(String)

    /// Every known reason: its documented spelling and what a sender does about it (APNS.md §4,
    /// §9.3, §10 and §12).
    static let table: [(reason: Reason, name: String, action: ResponseAction)] = [
        (.badCollapseId, "BadCollapseId", .fixRequest),
        (.badDeviceToken, "BadDeviceToken", .removeToken),  // also a sandbox/production mix-up: log before pruning in bulk
        (.badExpirationDate, "BadExpirationDate", .fixRequest),  // broadcast: only 0 on No-Message-Stored channels
        (.badMessageId, "BadMessageId", .fixRequest),
        (.badPriority, "BadPriority", .fixRequest),
        (.badTopic, "BadTopic", .fixRequest),
        (.deviceTokenNotForTopic, "DeviceTokenNotForTopic", .removeToken),  // often a missing .push-type.liveactivity suffix
        (.duplicateHeaders, "DuplicateHeaders", .fixRequest),
        (.idleTimeout, "IdleTimeout", .newConnection),  // Apple says only "Idle timeout"; connection-level by inference
        (.invalidPushType, "InvalidPushType", .fixRequest),
        (.missingDeviceToken, "MissingDeviceToken", .fixRequest),
        (.missingTopic, "MissingTopic", .fixRequest),
        (.payloadEmpty, "PayloadEmpty", .fixRequest),
        (.topicDisallowed, "TopicDisallowed", .fixCredentials),  // configuration: the key or app may not push to this topic
        (.featureNotEnabled, "FeatureNotEnabled", .fixCredentials),  // broadcast capability is off for the App ID
        (.missingChannelId, "MissingChannelId", .fixRequest),
        (.badChannelId, "BadChannelId", .removeChannel),  // observed for an ID that never existed
        (.channelNotRegistered, "ChannelNotRegistered", .removeChannel),  // the channel was deleted
        (.badRequestParams, "BadRequestParams", .fixRequest),
        (.badRequestPayload, "BadRequestPayload", .fixRequest),
        (.missingPushType, "MissingPushType", .fixRequest),
        (.cannotCreateChannelConfig, "CannotCreateChannelConfig", .fixRequest),  // 10,000 channels per app and environment: delete finished ones
        (.badCertificate, "BadCertificate", .fixCredentials),
        (.badCertificateEnvironment, "BadCertificateEnvironment", .fixCredentials),
        (.expiredProviderToken, "ExpiredProviderToken", .newConnection),  // JWT older than 1 hour; the connection is wedged, retire it
        (.forbidden, "Forbidden", .fixCredentials),  // Apple: do not retry
        (.invalidProviderToken, "InvalidProviderToken", .fixCredentials),
        (.missingProviderToken, "MissingProviderToken", .fixCredentials),
        (.unrelatedKeyIdInToken, "UnrelatedKeyIdInToken", .newConnection),  // Apple: open a new connection
        (.badEnvironmentKeyIdInToken, "BadEnvironmentKeyIdInToken", .fixCredentials),
        (.topicMismatch, "TopicMismatch", .fixCredentials),  // the token's bundle IDs do not include the path's
        (.badPath, "BadPath", .fixRequest),
        (.methodNotAllowed, "MethodNotAllowed", .fixRequest),
        (.expiredToken, "ExpiredToken", .removeToken),
        (.unregistered, "Unregistered", .removeToken),  // compare the 410 timestamp with the registration time
        (.payloadTooLarge, "PayloadTooLarge", .fixRequest),  // Apple: do not retry
        (.tooManyProviderTokenUpdates, "TooManyProviderTokenUpdates", .newConnection),  // the connection stays unusable for a while
        (.tooManyRequests, "TooManyRequests", .retry),  // per device token: retry with a delay
        (.internalServerError, "InternalServerError", .retry),
        (.serviceUnavailable, "ServiceUnavailable", .retry),
        (.shutdown, "Shutdown", .retryOnNewConnection),
    ]

    private static let names: [Reason: String] = Dictionary(uniqueKeysWithValues: table.map { ($0.reason, $0.name) })
    private static let actions: [Reason: ResponseAction] = Dictionary(uniqueKeysWithValues: table.map { ($0.reason, $0.action) })

    /// What a sender does about this reason; nil for an unknown one (`ResponseAction` then decides by status).
    public var action: ResponseAction? { Reason.actions[self] }

    /// Every known reason, for tables and tests.
    public static let known: [Reason] = table.map(\.reason)

    /// Other spellings seen in the wild, mapped to the documented reason: the observed
    /// `BroadcastFeatureNotEnabled` (APNS.md §9.2) and APNSwift's `BadEnvironmentKeyInToken` (§4).
    private static let aliases: [String: Reason] = [
        "broadcastfeaturenotenabled": .featureNotEnabled,
        "badenvironmentkeyintoken": .badEnvironmentKeyIdInToken,
    ]

    private static let byNormalizedName: [String: Reason] = {
        var names = aliases
        for row in Reason.table { names[normalized(row.name)] = row.reason }
        return names
    }()

    /// Recognises `text` whatever its case and spacing (`Service Unavailable` is `.serviceUnavailable`).
    public init(_ text: String) {
        self = Reason.byNormalizedName[Reason.normalized(text)] ?? .unknown(text)
    }

    /// The documented spelling (for `.unknown`, the text as received).
    public var name: String {
        if case .unknown(let text) = self { return text }
        return Reason.names[self] ?? ""
    }

    public var description: String { name }

    private static func normalized(_ text: String) -> String {
        String(decoding: text.utf8.compactMap { byte -> UInt8? in
            switch byte {
            case UInt8(ascii: " "), UInt8(ascii: "-"), UInt8(ascii: "_"), 0x09: nil
            case UInt8(ascii: "A")...UInt8(ascii: "Z"): byte | 0x20
            default: byte
            }
        }, as: UTF8.self)
    }
}

import DaemonConfiguration
import Runtime
import APNs
import Crypto
import Fanout
import JSONCore
import TokenStore
import Vocabulary

/// The checks of an API body's values that name the body's field (the object itself is read
/// strictly by `JSONObjectFields`, as events are: a repeated or unknown member is refused by its name,
/// so a phone sending "topic" for "topics" learns it at once instead of following nothing).
package enum BodyFields {
    /// A name the store takes (installation id, topic, event key): its limits, checked here so the
    /// message names the body's field rather than the store's.
    package static func name(_ value: JSONValue, field: String) throws(EventError) -> String {
        guard let text = value.stringValue else { throw EventError(field: field, "must be a string") }
        do { try StoreLimits.checkName(text, field: field) } catch { throw EventError(field: field, "must be 1...\(StoreLimits.maximumNameBytes) bytes without control characters") }
        return text
    }

    /// An installation id: a name the store takes that is also one path segment of
    /// `/v1/installations/{id}` — no "/" (the path is percent-decoded before routing, so "%2F"
    /// cannot address it either) and not "." or ".." (clients normalise those away): an id the
    /// phone could never PUT or DELETE again is refused when it is registered.
    package static func installationID(_ value: JSONValue, field: String) throws(EventError) -> String {
        let text = try name(value, field: field)
        guard StoreLimits.isAddressableInstallationID(text) else {
            throw EventError(field: field, "\(StoreLimits.addressableInstallationIDRule): it is a segment of /v1/installations/{id}")
        }
        return text
    }

    /// A token as hex: the same rules as every other token parser (`DeviceToken`), and the store's
    /// length bounds.
    package static func token(_ value: JSONValue, field: String) throws(EventError) -> [UInt8] {
        guard let text = value.stringValue else { throw EventError(field: field, "must be the token as a string of hex digits") }
        do throws(ValidationError) { _ = try DeviceToken(hex: text) } catch { throw EventError(field: field, error.message) }
        // DeviceToken checked the digits and the even length, so the decode cannot fail.
        let bytes = Hex.decode(text) ?? []
        do { try StoreLimits.checkToken(bytes, field: field) } catch { throw EventError(field: field, error.description) }
        return bytes
    }

    /// An Android phone's FCM registration token: its text, kept as its bytes (not hex).
    package static func fcmToken(_ value: JSONValue, field: String) throws(EventError) -> [UInt8] {
        guard let text = value.stringValue else { throw EventError(field: field, "must be the FCM registration token as a string") }
        guard DeviceToken.isFCMRegistrationToken(text) else { throw EventError(field: field, "must be \(StoreLimits.fcmTokenRule)") }
        return Array(text.utf8)
    }
}

/// The body of `POST /v1/installations` and `PUT /v1/installations/{id}`: the app, the tokens the
/// phone has, and the topics they follow. `package` for the fuzz targets (Tests/FuzzTargets).
///
/// `platform` (default `"ios"`, so every body written before Android support means what it
/// meant) picks the tokens: an iOS body has `pushToStartToken` and/or `deviceToken` (hex) and may
/// say `broadcast`; an Android body (`"platform":"android"`) has `fcmToken` (its text) and none of
/// the iOS members. A member of the other platform is refused by its name, not ignored: a phone
/// sending it has a bug its developer should see at once.
package struct InstallationBody {
    package var app: BundleID
    package var environment: Environment
    package var platform: Platform
    package var installationID: String?
    package var tokens: [(kind: TokenKind, token: [UInt8])]
    package var topics: [TopicSubscription]
    package var broadcast: Bool?

    package init(json bytes: [UInt8]) throws(EventError) {
        var fields = try JSONObjectFields<EventError>(json: bytes, root: "body")
        app = try fields.required("app") { (value, field) throws(EventError) in
            guard let text = value.stringValue else { throw EventError(field: field, "must be the app's bundle ID as a string") }
            do throws(ValidationError) { return try BundleID(text) } catch { throw EventError(field: field, error.message) }
        }
        environment = try fields.required("environment") { (value, field) throws(EventError) in
            guard let text = value.stringValue, let environment = try? Environment(name: text) else {
                throw EventError(field: field, "must be \"production\" or \"sandbox\"")
            }
            return environment
        }
        platform = try fields.optional("platform") { (value, field) throws(EventError) in
            guard let text = value.stringValue, let platform = Platform(rawValue: text) else {
                throw EventError(field: field, "must be \"ios\" or \"android\"")
            }
            return platform
        } ?? .ios
        installationID = try fields.optional("installationId") { (value, field) throws(EventError) in try BodyFields.installationID(value, field: field) }
        let pushToStart = try fields.optional("pushToStartToken") { (value, field) throws(EventError) in try BodyFields.token(value, field: field) }
        let device = try fields.optional("deviceToken") { (value, field) throws(EventError) in try BodyFields.token(value, field: field) }
        let fcm = try fields.optional("fcmToken") { (value, field) throws(EventError) in try BodyFields.fcmToken(value, field: field) }
        tokens = [pushToStart.map { (TokenKind.pushToStart, $0) }, device.map { (TokenKind.device, $0) },
                  fcm.map { (TokenKind.fcm, $0) }].compactMap { $0 }
        topics = try fields.optional("topics") { (value, field) throws(EventError) in
            guard let items = value.arrayValue else { throw EventError(field: field, "must be an array of {\"name\",\"minLevel\"}") }
            guard items.count <= StoreLimits.maximumTopics else { throw EventError(field: field, "has \(items.count) topics; at most \(StoreLimits.maximumTopics)") }
            var topics: [TopicSubscription] = []
            var names: Set<String> = []
            for (index, item) in items.enumerated() {
                var topic = try JSONObjectFields<EventError>(item, path: "\(field)[\(index)]", root: "body")
                let name = try topic.required("name") { (value, field) throws(EventError) in try BodyFields.name(value, field: field) }
                let level: UInt8 = try topic.optional("minLevel") { (value, field) throws(EventError) -> UInt8 in
                    guard let number = value.int64Value, (0...255).contains(number) else { throw EventError(field: field, "must be a whole number from 0 to 255") }
                    return UInt8(number)
                } ?? 0
                try topic.rejectUnknown()
                guard names.insert(name).inserted else { throw EventError(field: "\(field)[\(index)].name", "'\(name)' is listed twice") }
                topics.append(TopicSubscription(name: name, minLevel: level))
            }
            return topics
        } ?? []
        broadcast = try fields.optional("broadcast") { (value, field) throws(EventError) in
            guard let flag = value.boolValue else { throw EventError(field: field, "must be true (iOS 18 or later) or false") }
            return flag
        }
        try fields.rejectUnknown()
        switch platform {
        case .ios:
            if fcm != nil { throw EventError(field: "fcmToken", "is an Android phone's token; send it with \"platform\":\"android\"") }
            // Topics belong to a token kind: without a token there is nothing to follow them with.
            guard !tokens.isEmpty else { throw EventError(field: "pushToStartToken", "or deviceToken is required (the tokens the topics apply to)") }
        case .android:
            for (member, given) in [("pushToStartToken", pushToStart != nil), ("deviceToken", device != nil), ("broadcast", broadcast != nil)] where given {
                throw EventError(field: member, "is for iOS phones; an Android installation (\"platform\":\"android\") has fcmToken only")
            }
            guard fcm != nil else { throw EventError(field: "fcmToken", "is required for \"platform\":\"android\" (the token the topics apply to)") }
        }
    }
}

/// The body of `POST /v1/installations/{id}/activities`: a Live Activity the phone started and
/// its update token.
package struct ActivityBody {
    package var eventKey: String
    package var activityID: String
    package var token: [UInt8]
    package var topic: String?

    package init(json bytes: [UInt8]) throws(EventError) {
        var fields = try JSONObjectFields<EventError>(json: bytes, root: "body")
        eventKey = try fields.required("eventKey") { (value, field) throws(EventError) in try BodyFields.name(value, field: field) }
        activityID = try fields.required("activityId") { (value, field) throws(EventError) in try BodyFields.name(value, field: field) }
        token = try fields.required("token") { (value, field) throws(EventError) in try BodyFields.token(value, field: field) }
        topic = try fields.optional("topic") { (value, field) throws(EventError) in try BodyFields.name(value, field: field) }
        try fields.rejectUnknown()
    }
}

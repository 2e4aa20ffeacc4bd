import APNs
import JSONCore
import Vocabulary

/// APNs' checks on a request, as pure functions of its parts (no sockets, no state): what the
/// simulator answers before faults, tokens and channels come into play.
enum RequestRules {
    /// What a request asks for.
    enum Route: Equatable {
        case devicePush(token: String)
        case broadcast(bundle: String)
        case channels(bundle: String)
        case allChannels(bundle: String)
    }

    /// A refusal: APNs' reason (its status follows from it).
    struct Refusal: Error, Equatable {
        let reason: Reason
        var detail: String = ""
    }

    /// The route of `path`, or BadPath. Device tokens must be hex (BadDeviceToken), at least
    /// `minimumTokenHexDigits` long (BadDeviceToken) and present (MissingDeviceToken).
    static func route(method: String, path: String, managementPort: Bool) throws(Refusal) -> Route {
        // The common case first, without splitting the path: /3/device/<hex token>.
        if !managementPort, path.utf8.starts(with: devicePrefix) {
            guard method == "POST" else { throw Refusal(reason: .methodNotAllowed, detail: method) }
            let token = path.utf8.dropFirst(devicePrefix.count)
            guard !token.isEmpty else { throw Refusal(reason: .missingDeviceToken) }
            guard token.count % 2 == 0, token.allSatisfy({ Hex.value($0) != nil }) else { throw Refusal(reason: .badDeviceToken) }
            guard token.count >= minimumTokenHexDigits else {
                throw Refusal(reason: .badDeviceToken, detail: "\(token.count / 2) bytes; a device token has at least \(DeviceToken.issuedAPNsByteCount)")
            }
            let lowercase = token.allSatisfy { $0 < 65 || $0 > 70 }
            let text = String(Substring(token))
            return .devicePush(token: lowercase ? text : text.lowercased())
        }
        let parts = path.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        if managementPort {
            // /1/apps/<bundle>/channels | /1/apps/<bundle>/all-channels
            guard parts.count == 5, parts[0].isEmpty, parts[1] == "1", parts[2] == "apps", !parts[3].isEmpty else {
                throw Refusal(reason: .badPath, detail: path)
            }
            switch (parts[4], method) {
            case ("channels", "POST"), ("channels", "GET"), ("channels", "DELETE"): return .channels(bundle: parts[3])
            case ("all-channels", "GET"): return .allChannels(bundle: parts[3])
            case ("channels", _), ("all-channels", _): throw Refusal(reason: .methodNotAllowed, detail: method)
            default: throw Refusal(reason: .badPath, detail: path)
            }
        }
        // Every "/3/device/…" took the branch above; only the bare "/3/device" is left.
        if path == "/3/device" {
            guard method == "POST" else { throw Refusal(reason: .methodNotAllowed, detail: method) }
            throw Refusal(reason: .missingDeviceToken)
        }
        if parts.count == 5, parts[0].isEmpty, parts[1] == "4", parts[2] == "broadcasts", parts[3] == "apps", !parts[4].isEmpty {
            guard method == "POST" else { throw Refusal(reason: .methodNotAllowed, detail: method) }
            return .broadcast(bundle: parts[4])
        }
        throw Refusal(reason: .badPath, detail: path)
    }

    private static let devicePrefix = Array("/3/device/".utf8)

    /// The shortest token the simulator takes: `DeviceToken.issuedAPNsByteCount` (32 bytes, 64 hex
    /// digits), written there with every other token bound. APNS.md §6: "Don't assume a device
    /// token length." Device tokens are 32 bytes today and push-to-start / update tokens can be
    /// longer; nothing says how Apple answers a shorter one. The simulator assumes APNs answers
    /// BadDeviceToken below today's 32 bytes (UNCONFIRMED; the stricter choice), so a sender that
    /// truncates tokens, or a test that pushes to an 8-byte stand-in, fails here. (The sender sets
    /// no minimum, as Apple advises; only the peer refuses.)
    static var minimumTokenHexDigits: Int { 2 * DeviceToken.issuedAPNsByteCount }

    /// Headers that must not repeat (DuplicateHeaders).
    static func checkDuplicates(_ headers: [(name: String, value: String)]) throws(Refusal) {
        var seen = Set<String>()
        for header in headers where header.name.hasPrefix("apns-") || header.name == "authorization" {
            guard seen.insert(header.name).inserted else { throw Refusal(reason: .duplicateHeaders, detail: header.name) }
        }
    }

    /// A device push's headers and payload, as APNs checks them. Returns the parsed notification.
    static func checkDevicePush(headers: [(name: String, value: String)], body: [UInt8], bundles: Set<String>) throws(Refusal) -> Notification {
        guard !body.isEmpty else { throw Refusal(reason: .payloadEmpty) }
        let fields = headers.map { HeaderField($0.name, $0.value) }
        let notification: Notification
        do {
            notification = try Notification(receivedHeaders: fields, payload: body)
        } catch {
            throw Refusal(reason: error.reason ?? .badRequestPayload, detail: error.description)
        }
        let bundle = String(PushType.split(topic: notification.topic).bundle)
        if !bundles.isEmpty && !bundles.contains(bundle) { throw Refusal(reason: .topicDisallowed, detail: bundle) }
        let summary: PayloadValidator.Summary
        do {
            summary = try PayloadValidator.validate(body, for: .device(notification.pushType))
        } catch {
            throw Refusal(reason: error.reason ?? .badRequestPayload, detail: error.description)
        }
        try checkOnePushType(summary)
        return notification
    }

    /// A start asks for one push type for its activity: `input-push-token` (updates by token) or
    /// `input-push-channel` (updates by broadcast), not both. ActivityKit gives an activity exactly
    /// one (`PushType.token` or `.channel(id)`); Apple's payload reference lists both keys without
    /// saying whether a start may carry them together, and an independent strict APNs refuses it
    /// ("alternatives, not both"). The simulator takes that stricter reading and answers 400
    /// `BadRequestParams` (UNCONFIRMED whether Apple's APNs refuses or lets the phone pick), so a
    /// sender that combines them fails here rather than in production.
    static func checkOnePushType(_ summary: PayloadValidator.Summary) throws(Refusal) {
        if summary.carriesInputPushToken && summary.carriesInputPushChannel {
            throw Refusal(reason: .badRequestParams,
                          detail: "aps.input-push-token and aps.input-push-channel are alternatives, not both: an activity has one push type")
        }
    }

    /// `apns-push-type` spellings a broadcast takes: each is one Apple documents for broadcasts,
    /// and nothing else (no lower-casing). APNS.md §9.1: "The table says "`Liveactivity`"; the
    /// samples use `liveactivity`"; §9.3 `InvalidPushType`: "only `LiveActivity` allowed".
    static let broadcastPushTypes: Set<String> = ["liveactivity", "Liveactivity", "LiveActivity"]

    /// `apns-request-id` on broadcasts and channel management, when present, must be a canonical
    /// UUID. APNS.md §9.1: "`apns-request-id` | optional | UUID string, echoed back"; §9.2:
    /// "optional `apns-request-id` (canonical UUID, echoed or generated)". Apple names no reason for
    /// a bad one; the simulator answers 400 `BadMessageId` (§9.3: "bad `apns-id`"), its closest
    /// documented reason (UNCONFIRMED), and takes only the lower-case form APNs documents for IDs (§2).
    static func checkRequestID(_ headers: [(name: String, value: String)]) throws(Refusal) {
        guard let text = headers.first(where: { $0.name == HeaderName.requestID })?.value else { return }
        do { _ = try APNsID(text, field: HeaderName.requestID) } catch {
            throw Refusal(reason: .badMessageId, detail: error.description)
        }
    }

    /// A broadcast's headers and payload (the channel itself is checked against the channel table).
    static func checkBroadcast(headers: [(name: String, value: String)], body: [UInt8], bundle: String,
                               bundles: Set<String>) throws(Refusal) -> (channel: String, expiration: Int64) {
        func value(_ name: String) -> String? { headers.first { $0.name == name }?.value }
        // APNS.md §9.3: "400 | `TopicDisallowed` | topic not allowed; no push-type suffix on the bundle ID".
        if let implied = PushType.split(topic: bundle).impliedType, implied.topicSuffix.hasPrefix(".push-type.") {
            throw Refusal(reason: .topicDisallowed, detail: bundle)
        }
        // Another app's bundle: APNS.md §9.3: "403 | `TopicMismatch` | bundle IDs in the token or
        // certificate don't include the topic in the path" (not the device table's TopicDisallowed).
        if !bundles.isEmpty && !bundles.contains(bundle) { throw Refusal(reason: .topicMismatch, detail: bundle) }
        if let topic = value(HeaderName.topic), topic != bundle { throw Refusal(reason: .topicDisallowed, detail: topic) }
        try checkRequestID(headers)
        guard let pushType = value(HeaderName.pushType) else { throw Refusal(reason: .missingPushType) }
        guard broadcastPushTypes.contains(pushType) else { throw Refusal(reason: .invalidPushType, detail: pushType) }
        guard let channel = value(HeaderName.channelID), !channel.isEmpty else { throw Refusal(reason: .missingChannelId) }
        do { _ = try ChannelID(channel) } catch { throw Refusal(reason: .badChannelId, detail: channel) }
        guard let expirationText = value(HeaderName.expiration), let expiration = Int64(expirationText), expiration >= 0 else {
            throw Refusal(reason: .badExpirationDate, detail: "apns-expiration is required on broadcasts")
        }
        // APNS.md §9.1: "`apns-priority` | yes | 10 / 5 / 1" — required on a broadcast, unlike a
        // device push (where it defaults to 10). Apple names no reason for a missing one; the
        // simulator answers §9.3's "400 | `BadPriority` | bad priority" (UNCONFIRMED; stricter than
        // taking it as 10).
        guard let priority = value(HeaderName.priority) else {
            throw Refusal(reason: .badPriority, detail: "apns-priority is required on broadcasts")
        }
        guard ["1", "5", "10"].contains(priority) else { throw Refusal(reason: .badPriority, detail: priority) }
        guard !body.isEmpty else { throw Refusal(reason: .payloadEmpty) }
        do {
            _ = try PayloadValidator.validate(body, for: .broadcast)
        } catch {
            throw Refusal(reason: error.reason ?? .badRequestPayload, detail: error.description)
        }
        return (channel, expiration)
    }

    /// A channel-create body: `{"message-storage-policy":0|1,"push-type":"LiveActivity"}`.
    static func checkChannelCreate(body: [UInt8]) throws(Refusal) -> Int {
        guard !body.isEmpty else { throw Refusal(reason: .payloadEmpty) }
        guard let json = try? JSONParser.parse(body), let members = json.objectMembers else {
            throw Refusal(reason: .badRequestPayload)
        }
        var policy: Int?
        var pushTypeOK = false
        for member in members {
            switch member.key {
            case "message-storage-policy":
                guard let value = member.value.int64Value, value == 0 || value == 1 else { throw Refusal(reason: .badRequestParams) }
                policy = Int(value)
            case "push-type":
                // Exactly the documented value. APNS.md §9.2: create body `{"message-storage-policy":
                // 0|1, "push-type": "LiveActivity"}`; §9.3: "`InvalidPushType` | wrong push type; only
                // `LiveActivity` allowed". Other spellings are refused (UNCONFIRMED whether Apple
                // ignores case here; the stricter choice).
                guard member.value.stringValue == "LiveActivity" else {
                    throw Refusal(reason: .invalidPushType, detail: member.value.jsonText)
                }
                pushTypeOK = true
            default:
                throw Refusal(reason: .badRequestParams, detail: member.key)
            }
        }
        guard let policy else { throw Refusal(reason: .badRequestParams, detail: "message-storage-policy") }
        guard pushTypeOK else { throw Refusal(reason: .missingPushType) }
        return policy
    }
}

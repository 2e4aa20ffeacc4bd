import FCM
import JSONCore
import Vocabulary

/// FCM's checks on a send body (FCM.md, "Sending"), as pure functions: what the simulator answers
/// 400 INVALID_ARGUMENT for, naming the field as Google's BadRequest detail does. Strict where FCM
/// documents a rule (exactly one target, string data values, reserved keys, the TTL's form and
/// range, the two priorities, 4,096 bytes); names are taken in snake_case and lowerCamelCase alike,
/// as Google's protobuf JSON parser takes both.
enum FCMMessageRules {
    /// What an accepted body asks for.
    struct Send: Equatable {
        /// The registration token, or nil for a topic or condition.
        let token: String?
        let validateOnly: Bool
    }

    static func check(_ body: [UInt8]) throws(FCMRefusal) -> Send {
        let parsed: JSONValue
        do { parsed = try JSONParser.parse(body) } catch { throw .invalidJSON("\(error)") }
        guard let root = parsed.objectMembers else { throw .invalidJSON("The body is not a JSON object.") }
        var message: [(key: String, value: JSONValue)]?
        var validateOnly = false
        for (key, value) in try members(root, at: "") {
            switch key {
            case "message": message = try object(value, at: "message")
            case "validate_only":
                guard let flag = value.boolValue else { throw .invalidArgument("validate_only", "Invalid value at 'validate_only' (TYPE_BOOL)") }
                validateOnly = flag
            default: throw unknown(key, at: "")
            }
        }
        guard let message else { throw .invalidArgument("message", "Message is not set.") }
        var target: (name: String, value: JSONValue)?
        for (key, value) in try members(message, at: "message") {
            switch key {
            case "token", "topic", "condition":
                if let target { throw .invalidArgument("message", "Invalid JSON payload received. Oneof field 'target' is already set. Cannot set '\(key)' (\(target.name) is set).") }
                target = (key, value)
            case "data": try checkData(value, at: "message.data")
            case "notification": try checkNotification(value, at: "message.notification")
            case "android": try checkAndroid(value)
            case "apns", "webpush", "fcm_options": _ = try object(value, at: "message.\(key)")
            case "name": _ = try string(value, at: "message.name")
            default: throw unknown(key, at: "message")
            }
        }
        guard let target else { throw .invalidArgument("message", "Recipient of the message is not set.") }
        // The payload as Google counts it (FCMPayloadLimit): data keys and values, notification texts.
        let data = message.first { $0.key == "data" }?.value.objectMembers?.map { ($0.key, $0.value.stringValue ?? "") } ?? []
        let notification = message.first { $0.key == "notification" }?.value
        let payload = FCMPayloadLimit.count(data: data, notification: FCMNotification(title: notification?["title"]?.stringValue,
                                                                                      body: notification?["body"]?.stringValue))
        guard payload <= FCMPayloadLimit.maximumBytes else {
            throw .invalidArgument("message", "Message is too big: \(payload) bytes of payload (data keys and values, notification texts); the limit is \(FCMPayloadLimit.maximumBytes)")
        }
        let text = try string(target.value, at: "message.\(target.name)")
        switch target.name {
        case "token":
            guard DeviceToken.isFCMRegistrationToken(text) else { throw .invalidToken }
            return Send(token: text, validateOnly: validateOnly)
        case "topic":
            let topic = text.hasPrefix("/topics/") ? String(text.dropFirst("/topics/".count)) : text
            guard !topic.isEmpty, topic.utf8.allSatisfy(isTopicByte) else { throw .invalidArgument("message.topic", "Invalid topic name: \(text)") }
            return Send(token: nil, validateOnly: validateOnly)
        default:
            guard !text.isEmpty else { throw .invalidArgument("message.condition", "Invalid condition expression") }
            return Send(token: nil, validateOnly: validateOnly)
        }
    }

    private static func checkData(_ value: JSONValue, at field: String) throws(FCMRefusal) {
        for (index, member) in try object(value, at: field).enumerated() {
            guard member.value.stringValue != nil else {
                throw .invalidArgument("\(field)[\(index)].value", "Invalid value at '\(field)[\(index)].value' (TYPE_STRING), \(member.value.jsonText)")
            }
            if FCMDataKey.isReserved(member.key) || member.key.isEmpty {
                throw .invalidArgument(field, "Invalid data payload key: \"\(member.key)\" (from, notification, message_type, google.* and gcm.* are reserved)")
            }
        }
    }

    private static func checkNotification(_ value: JSONValue, at field: String) throws(FCMRefusal) {
        for (key, member) in try members(try object(value, at: field), at: field) {
            guard ["title", "body", "image"].contains(key) else { throw unknown(key, at: field) }
            _ = try string(member, at: "\(field).\(key)")
        }
    }

    private static func checkAndroid(_ value: JSONValue) throws(FCMRefusal) {
        let field = "message.android"
        for (key, member) in try members(try object(value, at: field), at: field) {
            let path = "\(field).\(key)"
            switch key {
            case "collapse_key", "restricted_package_name": _ = try string(member, at: path)
            case "priority":
                guard let text = member.stringValue, FCMPriority(rawValue: text) != nil else {
                    throw .invalidArgument(path, "Invalid value at '\(path)' (type.googleapis.com/google.firebase.fcm.v1.AndroidMessagePriority), \(member.jsonText)")
                }
            case "ttl":
                guard let text = member.stringValue, let ttl = FCMDuration.parse(text) else {
                    throw .invalidArgument(path, "Invalid value at '\(path)' (type.googleapis.com/google.protobuf.Duration), \(member.jsonText)")
                }
                guard FCMDuration.ttlRange.contains(ttl) else {
                    throw .invalidArgument(path, "The TTL is \(text); it must be between 0s and 2419200s (4 weeks)")
                }
            case "data": try checkData(member, at: path)
            case "notification", "fcm_options": _ = try object(member, at: path)
            case "direct_boot_ok":
                guard member.boolValue != nil else { throw .invalidArgument(path, "Invalid value at '\(path)' (TYPE_BOOL), \(member.jsonText)") }
            default: throw unknown(key, at: field)
            }
        }
    }

    /// lowerCamelCase spellings protobuf JSON also takes, and their snake_case names.
    private static let camelCase = ["validateOnly": "validate_only", "fcmOptions": "fcm_options", "collapseKey": "collapse_key",
                                    "restrictedPackageName": "restricted_package_name", "directBootOk": "direct_boot_ok"]

    /// The members under their snake_case names; a member given twice (in either spelling) refused.
    private static func members(_ members: [(key: String, value: JSONValue)], at field: String) throws(FCMRefusal) -> [(key: String, value: JSONValue)] {
        var seen: Set<String> = []
        var out: [(key: String, value: JSONValue)] = []
        for member in members {
            let key = camelCase[member.key] ?? member.key
            guard seen.insert(key).inserted else {
                throw .invalidArgument(field.isEmpty ? key : field, "Invalid JSON payload received. Duplicate field \"\(member.key)\".")
            }
            out.append((key, member.value))
        }
        return out
    }

    private static func object(_ value: JSONValue, at field: String) throws(FCMRefusal) -> [(key: String, value: JSONValue)] {
        guard let members = value.objectMembers else { throw .invalidArgument(field, "Invalid value at '\(field)': not an object, \(value.jsonText)") }
        return members
    }

    private static func string(_ value: JSONValue, at field: String) throws(FCMRefusal) -> String {
        guard let text = value.stringValue else { throw .invalidArgument(field, "Invalid value at '\(field)' (TYPE_STRING), \(value.jsonText)") }
        return text
    }

    private static func unknown(_ key: String, at field: String) -> FCMRefusal {
        .invalidArgument(field.isEmpty ? key : field, "Invalid JSON payload received. Unknown name \"\(key)\"\(field.isEmpty ? "" : " at '\(field)'"): Cannot find field.")
    }

    /// FCM's topic names: `[a-zA-Z0-9-_.~%]+`.
    private static func isTopicByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
             UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."), UInt8(ascii: "~"), UInt8(ascii: "%"): true
        default: false
        }
    }
}

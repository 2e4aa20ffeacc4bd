import APNs
import JSONCore

/// Reads an app's `android` member: `{"package", "serviceAccountFile", "fcmHost", "tokenHost",
/// "caFile", "connections", "messagesPerMinute"}`, the first two required. Unknown and repeated
/// members are refused by name, as everywhere in the configuration.
enum AndroidReading {
    private struct Draft {
        var package: String?
        var serviceAccountFile: String?
        var fcmHost: Endpoint?
        var tokenHost: Endpoint?
        var caFile: String?
        var connections = AndroidApp.defaultConnections
        var messagesPerMinute = AndroidApp.defaultMessagesPerMinute
    }

    private static let members: [JSONMember<Draft, ConfigurationError>] = [
        JSONMember("package") { (value, field, draft) throws(ConfigurationError) in
            let text = try SettingValue.string(.json(value), field: field, expected: "the Android application ID, e.g. com.example.eew")
            guard AndroidApp.isPackageName(text) else {
                throw ConfigurationError(field: field, "\"\(text)\" is not an Android application ID (dot-separated segments, each a letter "
                                         + "then letters, digits or '_', e.g. com.example.eew: the applicationId in the app's build.gradle)")
            }
            draft.package = text
        },
        JSONMember("serviceAccountFile") { (value, field, draft) throws(ConfigurationError) in
            draft.serviceAccountFile = try SettingValue.path(.json(value), field: field)
        },
        JSONMember("fcmHost") { (value, field, draft) throws(ConfigurationError) in draft.fcmHost = try AppReading.endpoint(value, field: field) },
        JSONMember("tokenHost") { (value, field, draft) throws(ConfigurationError) in draft.tokenHost = try AppReading.endpoint(value, field: field) },
        JSONMember("caFile") { (value, field, draft) throws(ConfigurationError) in draft.caFile = try SettingValue.path(.json(value), field: field) },
        JSONMember("connections") { (value, field, draft) throws(ConfigurationError) in
            draft.connections = try SettingValue.integer(.json(value), field: field, in: AndroidApp.connectionsRange)
        },
        JSONMember("messagesPerMinute") { (value, field, draft) throws(ConfigurationError) in
            draft.messagesPerMinute = try SettingValue.integer(.json(value), field: field, in: AndroidApp.messagesPerMinuteRange)
        },
    ]

    static func android(_ value: JSONValue, path: String) throws(ConfigurationError) -> AndroidApp {
        var draft = Draft()
        try JSONObjectFields.read(value, path: path, root: "configuration", what: "an app's Android side", members: members, into: &draft)
        guard let package = draft.package else {
            throw ConfigurationError(field: "\(path).package", "is required: the Android application ID, e.g. com.example.eew")
        }
        guard let file = draft.serviceAccountFile else {
            throw ConfigurationError(field: "\(path).serviceAccountFile",
                                     "is required: the path of the service account's JSON key (Firebase console → Project settings → Service accounts → Generate new private key)")
        }
        return AndroidApp(package: package, serviceAccountFile: file, fcmHost: draft.fcmHost, tokenHost: draft.tokenHost, caFile: draft.caFile,
                          connections: draft.connections, messagesPerMinute: draft.messagesPerMinute)
    }
}

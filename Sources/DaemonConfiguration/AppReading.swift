import APNs
import Crypto
import JSONCore

/// Reads the `apps` list: from the file, or as JSON text from `--apps` / `SOKUHO_APPS` (so a
/// container can be configured by variables alone). Fields are named `apps[1].keyFile`, or
/// `--apps[1].keyFile` when the list came from the flag.
package enum AppReading {
    package static func apps(_ input: SettingInput, field: String) throws(ConfigurationError) -> [ServeConfiguration.App] {
        let value = try SettingValue.json(input, field: field, expected: "a JSON array of apps")
        guard let items = value.arrayValue, !items.isEmpty else {
            throw ConfigurationError(field: field, "must be a non-empty array of apps, each {\"bundleID\", \"teamID\", \"keyID\", \"keyFile\", \"environment\"}")
        }
        var apps: [ServeConfiguration.App] = []
        for (index, item) in items.enumerated() {
            apps.append(try app(item, path: "\(field)[\(index)]"))
        }
        return apps
    }

    /// The fields as read so far; the required ones are nil until given.
    private struct Draft {
        var bundleID: BundleID?
        var teamID: String?
        var keyID: String?
        var keyFile: String?
        var environment: Environment?
        var connections = ServeConfiguration.App.defaultConnections
        var streams = ServeConfiguration.App.defaultStreams
        var host: Endpoint?
        var manageHost: Endpoint?
        var caFile: String?
        var android: AndroidApp?
    }

    private static let members: [JSONMember<Draft, ConfigurationError>] = [
        JSONMember("bundleID") { (value, field, draft) throws(ConfigurationError) in
            let text = try SettingValue.string(.json(value), field: field, expected: "the app's bundle ID")
            do throws(ValidationError) { draft.bundleID = try BundleID(text) } catch { throw ConfigurationError(field: field, error.message) }
        },
        JSONMember("teamID") { (value, field, draft) throws(ConfigurationError) in
            draft.teamID = try appleIdentifier(value, field: field, invalid: CryptoError.invalidTeamID)
        },
        JSONMember("keyID") { (value, field, draft) throws(ConfigurationError) in
            draft.keyID = try appleIdentifier(value, field: field, invalid: CryptoError.invalidKeyID)
        },
        JSONMember("keyFile") { (value, field, draft) throws(ConfigurationError) in draft.keyFile = try SettingValue.path(.json(value), field: field) },
        JSONMember("environment") { (value, field, draft) throws(ConfigurationError) in
            let text = try SettingValue.string(.json(value), field: field, expected: "\"production\" or \"sandbox\"")
            do throws(ValidationError) { draft.environment = try Environment(name: text) } catch { throw ConfigurationError(field: field, error.message) }
        },
        JSONMember("connections") { (value, field, draft) throws(ConfigurationError) in
            draft.connections = try SettingValue.integer(.json(value), field: field, in: ServeConfiguration.App.connectionsRange)
        },
        JSONMember("streams") { (value, field, draft) throws(ConfigurationError) in
            draft.streams = try SettingValue.integer(.json(value), field: field, in: ServeConfiguration.App.streamsRange)
        },
        JSONMember("host") { (value, field, draft) throws(ConfigurationError) in draft.host = try endpoint(value, field: field) },
        JSONMember("manageHost") { (value, field, draft) throws(ConfigurationError) in draft.manageHost = try endpoint(value, field: field) },
        JSONMember("caFile") { (value, field, draft) throws(ConfigurationError) in draft.caFile = try SettingValue.path(.json(value), field: field) },
        JSONMember("android") { (value, field, draft) throws(ConfigurationError) in draft.android = try AndroidReading.android(value, path: field) },
    ]

    private static func app(_ value: JSONValue, path: String) throws(ConfigurationError) -> ServeConfiguration.App {
        var draft = Draft()
        try JSONObjectFields.read(value, path: path, root: "configuration", what: "an app", members: members, into: &draft)
        func missing(_ key: String, _ what: String) -> ConfigurationError { ConfigurationError(field: "\(path).\(key)", "is required: \(what)") }
        guard let bundleID = draft.bundleID else { throw missing("bundleID", "the app's bundle ID, e.g. com.example.quake") }
        guard let teamID = draft.teamID else { throw missing("teamID", "the 10-character Team ID the key belongs to") }
        guard let keyID = draft.keyID else { throw missing("keyID", "the 10-character Key ID (the part after AuthKey_ in the .p8 file name)") }
        guard let keyFile = draft.keyFile else { throw missing("keyFile", "the path of the .p8 key downloaded from Apple") }
        guard let environment = draft.environment else {
            throw missing("environment", "\"production\" or \"sandbox\"; there is no default, the wrong one answers BadDeviceToken for every phone")
        }
        return ServeConfiguration.App(bundleID: bundleID, teamID: teamID, keyID: keyID, keyFile: keyFile, environment: environment,
                                      connections: draft.connections, streams: draft.streams, host: draft.host,
                                      manageHost: draft.manageHost, caFile: draft.caFile, android: draft.android)
    }

    /// A Team or Key ID as Apple issues them; the message is `CryptoError`'s, which says where to find it.
    private static func appleIdentifier(_ value: JSONValue, field: String, invalid: (String) -> CryptoError) throws(ConfigurationError) -> String {
        let text = try SettingValue.string(.json(value), field: field, expected: "a 10-character Apple identifier")
        guard ProviderTokenSigner.isAppleIdentifier(text) else { throw ConfigurationError(field: field, invalid(text).description) }
        return text
    }

    static func endpoint(_ value: JSONValue, field: String) throws(ConfigurationError) -> Endpoint {
        try SettingValue.endpoint(try SettingValue.string(.json(value), field: field, expected: "HOST:PORT"), field: field)
    }
}

import APNs
import Daemon
import DaemonConfiguration
import Runtime
import Glibc
import Testing

/// `sokuho serve`'s configuration: one JSON file, `SOKUHO_*` variables and flags on top, checked
/// whole, every error naming the field (or variable, or flag) to fix.
@Suite struct ServeConfigurationTests {
    @Test func aValidConfigurationLoadsWithTheDefaultsApplied() throws {
        let fixture = try ServeConfigFixture()
        let config = try fixture.load(fixture.json())
        #expect(config.apps == [ServeConfiguration.App(bundleID: try BundleID("com.example.quake"), teamID: "TEAM000001", keyID: "KEY0000001",
                                                       keyFile: fixture.keyFile, environment: .production, connections: 4, streams: 1000)])
        #expect(config.listen == [Endpoint(host: "127.0.0.1", port: 8080)])
        #expect(config.storePath == "/srv/sokuho")
        #expect(config.adminTokenFile == fixture.tokenFile)
        #expect(config.keepalive == .seconds(300))
        #expect(config.credentialCheckInterval == .seconds(3600))
        #expect(config.startLimit == 8)
        #expect(config.startWindow == .seconds(3600))
        #expect(config.rateLimit == ServeConfiguration.RateLimit(perSecond: 20, burst: 40))
        #expect(config.maxBodyBytes == 1_048_576)
        #expect(config.statusPage)
        #expect(!config.allowReadableKey)
    }

    @Test func everySettingIsReadFromTheFile() throws {
        let fixture = try ServeConfigFixture()
        let app = fixture.app(environment: "sandbox", extra: #", "connections": 2, "streams": 50, "host": "127.0.0.1:8443", "manageHost": "[::1]:8444""#)
        let config = try fixture.load(fixture.json(apps: [app], extra: """
            , "listen": ["0.0.0.0:80", "[::1]:8080"], "keepaliveSeconds": 60, "credentialCheckSeconds": 600, "startLimit": null,
            "startWindowSeconds": 120, "rateLimit": {"perSecond": 5}, "maxBodyBytes": 4096, "statusPage": false
            """))
        let read = try #require(config.apps.first)
        #expect(read.environment == .sandbox && read.connections == 2 && read.streams == 50)
        #expect(read.host == Endpoint(host: "127.0.0.1", port: 8443) && read.manageHost == Endpoint(host: "::1", port: 8444))
        #expect(config.listen.map(\.description) == ["0.0.0.0:80", "[::1]:8080"])
        #expect(config.keepalive == .seconds(60) && config.credentialCheckInterval == .seconds(600))
        #expect(config.startLimit == nil && config.startWindow == .seconds(120))
        #expect(config.rateLimit == ServeConfiguration.RateLimit(perSecond: 5, burst: 10))
        #expect(config.maxBodyBytes == 4096 && !config.statusPage)
    }

    /// (what is wrong, the file's text with the placeholders KEY and TOKEN, the field the error names, a part of its message)
    static let invalidFiles: [(String, String, String, String)] = [
        ("unknown field", #"{"apps": [@APP], "adminTokenFile": "@TOKEN", "keepaliveSecond": 10}"#, "keepaliveSecond", "check its spelling"),
        ("unknown app field", #"{"apps": [@APP, {"bundleID": "com.example.b", "keyfile": "x"}], "adminTokenFile": "@TOKEN"}"#, "apps[1].keyfile", "not a field of an app"),
        ("repeated field", #"{"apps": [@APP], "adminTokenFile": "@TOKEN", "storePath": "/a", "storePath": "/b"}"#, "storePath", "appears twice"),
        ("wrong type", #"{"apps": [@APP], "adminTokenFile": "@TOKEN", "keepaliveSeconds": "300"}"#, "keepaliveSeconds", "whole number of seconds from 1 to 3600"),
        ("not an object", #"["apps"]"#, "configuration", "must be a JSON object"),
        ("not JSON", #"{"apps": "#, "configuration", "not valid JSON"),
        ("port 65536", #"{"apps": [@APP], "adminTokenFile": "@TOKEN", "listen": ["127.0.0.1:65536"]}"#, "listen[0]", "port from 0 to 65535"),
        ("port too high", #"{"apps": [@APP], "adminTokenFile": "@TOKEN", "listen": ["127.0.0.1:8080", "[::1]:65536"]}"#, "listen[1]", "HOST:PORT"),
        ("address twice", #"{"apps": [@APP], "adminTokenFile": "@TOKEN", "listen": ["127.0.0.1:80", "127.0.0.1:80"]}"#, "listen[1]", "given twice"),
        ("duplicate app", #"{"apps": [@APP, @APP], "adminTokenFile": "@TOKEN"}"#, "apps[1].bundleID", "already apps[0]"),
        ("no apps", #"{"apps": [], "adminTokenFile": "@TOKEN"}"#, "apps", "non-empty array"),
        ("apps missing", #"{"adminTokenFile": "@TOKEN"}"#, "apps", "at least one app"),
        ("missing key file", #"{"apps": [{"bundleID": "com.example.a", "teamID": "TEAM000001", "keyID": "KEY0000001", "keyFile": "/nonexistent/AuthKey.p8", "environment": "sandbox"}], "adminTokenFile": "@TOKEN"}"#, "apps[0].keyFile", "does not exist"),
        ("missing environment", #"{"apps": [{"bundleID": "com.example.a", "teamID": "TEAM000001", "keyID": "KEY0000001", "keyFile": "@KEY"}], "adminTokenFile": "@TOKEN"}"#, "apps[0].environment", "is required"),
        ("bad environment", #"{"apps": [{"bundleID": "com.example.a", "teamID": "TEAM000001", "keyID": "KEY0000001", "keyFile": "@KEY", "environment": "prod"}], "adminTokenFile": "@TOKEN"}"#, "apps[0].environment", "sandbox or production"),
        ("short team id", #"{"apps": [{"bundleID": "com.example.a", "teamID": "TEAM1", "keyID": "KEY0000001", "keyFile": "@KEY", "environment": "sandbox"}], "adminTokenFile": "@TOKEN"}"#, "apps[0].teamID", "10-character Team ID"),
        ("lowercase key id", #"{"apps": [{"bundleID": "com.example.a", "teamID": "TEAM000001", "keyID": "key0000001", "keyFile": "@KEY", "environment": "sandbox"}], "adminTokenFile": "@TOKEN"}"#, "apps[0].keyID", "10-character Key ID"),
        ("bad bundle id", #"{"apps": [{"bundleID": "com.example/a", "teamID": "TEAM000001", "keyID": "KEY0000001", "keyFile": "@KEY", "environment": "sandbox"}], "adminTokenFile": "@TOKEN"}"#, "apps[0].bundleID", "bundle ID"),
        ("zero connections", #"{"apps": [{"bundleID": "com.example.a", "teamID": "TEAM000001", "keyID": "KEY0000001", "keyFile": "@KEY", "environment": "sandbox", "connections": 0}], "adminTokenFile": "@TOKEN"}"#, "apps[0].connections", "from 1 to 256"),
        ("too many streams", #"{"apps": [{"bundleID": "com.example.a", "teamID": "TEAM000001", "keyID": "KEY0000001", "keyFile": "@KEY", "environment": "sandbox", "streams": 100001}], "adminTokenFile": "@TOKEN"}"#, "apps[0].streams", "from 1 to 100000"),
        ("key file is not a key", #"{"apps": [{"bundleID": "com.example.a", "teamID": "TEAM000001", "keyID": "KEY0000001", "keyFile": "@TOKEN", "environment": "sandbox"}], "adminTokenFile": "@TOKEN"}"#, "apps[0].keyFile", "not a PEM private key"),
        ("relative store", #"{"apps": [@APP], "adminTokenFile": "@TOKEN", "storePath": "store"}"#, "storePath", "absolute path"),
        ("no admin token file", #"{"apps": [@APP]}"#, "adminTokenFile", "is required"),
        ("missing admin token file", #"{"apps": [@APP], "adminTokenFile": "/nonexistent/admin.token"}"#, "adminTokenFile", "does not exist"),
        ("start limit 200", #"{"apps": [@APP], "adminTokenFile": "@TOKEN", "startLimit": 200}"#, "startLimit", "null (none, 0 as text) for no limit"),
        ("rate limit without rate", #"{"apps": [@APP], "adminTokenFile": "@TOKEN", "rateLimit": {"burst": 5}}"#, "rateLimit.perSecond", "is required"),
        ("cluster without redis", #"{"apps": [@APP], "adminTokenFile": "@TOKEN", "cluster": {"node": "a"}}"#, "cluster.redis", "is required"),
        ("cluster node with a space", #"{"apps": [@APP], "adminTokenFile": "@TOKEN", "cluster": {"redis": "10.0.0.5:6379", "node": "pi 1"}}"#, "cluster.node", "letters, digits"),
        ("cluster shards 0", #"{"apps": [@APP], "adminTokenFile": "@TOKEN", "cluster": {"redis": "10.0.0.5:6379", "node": "a", "shards": 0}}"#, "cluster.shards", "from 1 to 256"),
        ("cluster claim 1 s", #"{"apps": [@APP], "adminTokenFile": "@TOKEN", "cluster": {"redis": "10.0.0.5:6379", "node": "a", "claimSeconds": 1}}"#, "cluster.claimSeconds", "from 2 to 600"),
        ("cluster typo", #"{"apps": [@APP], "adminTokenFile": "@TOKEN", "cluster": {"redis": "10.0.0.5:6379", "shard": 4}}"#, "cluster.shard", "check its spelling"),
        ("cluster password file missing", #"{"apps": [@APP], "adminTokenFile": "@TOKEN", "cluster": {"redis": "10.0.0.5:6379", "node": "a", "passwordFile": "/nonexistent/redis.pass"}}"#, "cluster.passwordFile", "does not exist"),
    ]

    @Test(arguments: invalidFiles)
    func anInvalidFieldIsNamedInTheError(_ wrong: String, _ text: String, _ field: String, _ message: String) throws {
        let fixture = try ServeConfigFixture()
        let file = text.replacing("@APP", with: fixture.app()).replacing("@TOKEN", with: fixture.tokenFile).replacing("@KEY", with: fixture.keyFile)
        let error = #expect(throws: ConfigurationError.self, "\(wrong)") { try fixture.load(file) }
        #expect(error?.field == field, "\(wrong): \(error?.description ?? "")")
        #expect(error?.message.contains(message) == true, "\(wrong): \(error?.description ?? "")")
    }

    @Test func anAdminTokenFileThatIsEmptyIsRefused() throws {
        let fixture = try ServeConfigFixture()
        let empty = fixture.files.file("empty.token", "")
        chmod(empty, 0o600)
        let error = #expect(throws: ConfigurationError.self) { try fixture.load(fixture.json(), flags: ["--admin-token-file": [empty]]) }
        #expect(error?.field == "--admin-token-file" && error?.message.contains("is empty") == true)
    }

    @Test func aKeyReadableByOthersIsRefusedUnlessAllowed() throws {
        let fixture = try ServeConfigFixture()
        chmod(fixture.keyFile, 0o644)
        let error = #expect(throws: ConfigurationError.self) { try fixture.load(fixture.json()) }
        #expect(error?.field == "apps[0].keyFile")
        #expect(error?.message.contains("mode 0644") == true && error?.message.contains("chmod 600 \(fixture.keyFile)") == true)
        #expect(error?.message.contains("allowReadableKey") == true)
        #expect(try fixture.load(fixture.json(extra: #", "allowReadableKey": true"#)).allowReadableKey)
        #expect(try fixture.load(fixture.json(), flags: ["--allow-readable-key": [""]]).allowReadableKey)
        #expect(try fixture.load(fixture.json(), environment: ["SOKUHO_ALLOW_READABLE_KEY": "1"]).allowReadableKey)
    }

    @Test func anAdminTokenFileReadableByGroupIsRefusedUnlessAllowed() throws {
        let fixture = try ServeConfigFixture()
        chmod(fixture.tokenFile, 0o640)
        let error = #expect(throws: ConfigurationError.self) { try fixture.load(fixture.json()) }
        #expect(error?.field == "adminTokenFile" && error?.message.contains("mode 0640") == true)
        #expect(try fixture.load(fixture.json(extra: #", "allowReadableKey": true"#)).adminTokenFile == fixture.tokenFile)
    }

    @Test func aFlagBeatsAVariableWhichBeatsTheFile() throws {
        let fixture = try ServeConfigFixture()
        let file = fixture.json(extra: #", "keepaliveSeconds": 60"#)
        #expect(try fixture.load(file).keepalive == .seconds(60))
        #expect(try fixture.load(file, environment: ["SOKUHO_KEEPALIVE": "90"]).keepalive == .seconds(90))
        #expect(try fixture.load(file, environment: ["SOKUHO_KEEPALIVE": "90"], flags: ["--keepalive": ["120"]]).keepalive == .seconds(120))
        #expect(try fixture.load(file, environment: ["SOKUHO_KEEPALIVE": ""]).keepalive == .seconds(60), "an empty variable counts as unset")
        #expect(try fixture.load(file, environment: ["SOKUHO_STORE": "/env/store"]).storePath == "/env/store")
    }

    @Test func aBadValueFromAVariableOrFlagNamesIt() throws {
        let fixture = try ServeConfigFixture()
        let fromVariable = #expect(throws: ConfigurationError.self) { try fixture.load(fixture.json(), environment: ["SOKUHO_KEEPALIVE": "0"]) }
        #expect(fromVariable?.description == "SOKUHO_KEEPALIVE: must be a whole number of seconds from 1 to 3600, not '0'")
        let fromFlag = #expect(throws: ConfigurationError.self) { try fixture.load(fixture.json(), flags: ["--listen": ["localhost"]]) }
        #expect(fromFlag?.field == "--listen")
        let store = #expect(throws: ConfigurationError.self) { try fixture.load(fixture.json(), flags: ["--store": ["relative"]]) }
        #expect(store?.field == "--store")
        let rate = #expect(throws: ConfigurationError.self) { try fixture.load(fixture.json(), environment: ["SOKUHO_RATE_LIMIT": "fast"]) }
        #expect(rate?.field == "SOKUHO_RATE_LIMIT")
    }

    @Test func listenAddressesComeFromRepeatedFlagsOrACommaSeparatedVariable() throws {
        let fixture = try ServeConfigFixture()
        let fromVariable = try fixture.load(fixture.json(), environment: ["SOKUHO_LISTEN": "127.0.0.1:9000, [::1]:9000"])
        #expect(fromVariable.listen == [Endpoint(host: "127.0.0.1", port: 9000), Endpoint(host: "::1", port: 9000)])
        let fromFlags = try fixture.load(fixture.json(), environment: ["SOKUHO_LISTEN": "127.0.0.1:9000"], flags: ["--listen": ["10.0.0.1:80", "10.0.0.2:80"]])
        #expect(fromFlags.listen.map(\.description) == ["10.0.0.1:80", "10.0.0.2:80"])
    }

    @Test func appsCanComeFromAVariableAndTheirFieldsAreNamedByIt() throws {
        let fixture = try ServeConfigFixture()
        let config = try fixture.load(nil, environment: ["SOKUHO_APPS": "[\(fixture.app(environment: "sandbox"))]", "SOKUHO_ADMIN_TOKEN_FILE": fixture.tokenFile])
        #expect(config.apps.map(\.environment) == [.sandbox])
        let error = #expect(throws: ConfigurationError.self) {
            try fixture.load(nil, environment: ["SOKUHO_APPS": #"[{"bundleID": "com.example.a"}]"#, "SOKUHO_ADMIN_TOKEN_FILE": fixture.tokenFile])
        }
        #expect(error?.field == "SOKUHO_APPS[0].teamID")
    }

    @Test func limitsTakeNoneAndRatesTakeABurst() throws {
        let fixture = try ServeConfigFixture()
        let config = try fixture.load(fixture.json(), flags: ["--start-limit": ["none"], "--rate-limit": ["50/60"], "--status-page": ["off"]])
        #expect(config.startLimit == nil && config.rateLimit == ServeConfiguration.RateLimit(perSecond: 50, burst: 60) && !config.statusPage)
        #expect(try fixture.load(fixture.json(), flags: ["--start-limit": ["0"], "--rate-limit": ["off"]]).rateLimit == nil)
    }

    @Test func theJSONSummaryLoadsBackAsTheSameConfiguration() throws {
        let fixture = try ServeConfigFixture()
        let app = fixture.app(extra: #", "host": "[::1]:8443""#)
        let config = try fixture.load(fixture.json(apps: [app], extra: #", "startLimit": null, "rateLimit": null"#))
        let again = try fixture.load(config.json)
        #expect(again.json == config.json)
        #expect(again.apps == config.apps && again.startLimit == nil && again.rateLimit == nil)
    }

    @Test func aClusterSectionIsReadWithItsDefaultsAndLoadsBackFromTheSummary() throws {
        let fixture = try ServeConfigFixture()
        #expect(try fixture.load(fixture.json()).cluster == nil, "no section: this node alone")
        let config = try fixture.load(fixture.json(extra: #", "cluster": {"redis": "10.0.0.5:6379", "node": "pi-tokyo-1"}"#))
        let cluster = try #require(config.cluster)
        #expect(cluster.redis.description == "10.0.0.5:6379" && cluster.node == "pi-tokyo-1")
        #expect(cluster.shards == 8 && cluster.claimAfter == .seconds(15) && cluster.registrationStreamLength == 1_000_000 && cluster.passwordFile == nil)
        #expect(try fixture.load(config.json).cluster == cluster)
        // From the variable, as a container would set it; the node name defaults to the host name.
        let fromVariable = try fixture.load(fixture.json(), environment: ["SOKUHO_CLUSTER": #"{"redis": "[::1]:6380", "shards": 16}"#])
        #expect(fromVariable.cluster?.shards == 16 && fromVariable.cluster?.node.isEmpty == false)
        #expect(try fixture.load(fixture.json(extra: #", "cluster": null"#)).cluster == nil)
    }

    @Test func theLogFormatIsTextByDefaultAndJSONFromTheFileTheVariableOrTheFlag() throws {
        let fixture = try ServeConfigFixture()
        #expect(try fixture.load(fixture.json()).logFormat == .text)
        let fromFile = try fixture.load(fixture.json(extra: #", "logFormat": "json""#))
        #expect(fromFile.logFormat == .json)
        #expect(fromFile.summary.contains("\nlog format    json\n"), "\(fromFile.summary)")
        #expect(try fixture.load(fromFile.json).logFormat == .json, "it loads back from --check-config --json")
        #expect(try fixture.load(fixture.json(), environment: ["SOKUHO_LOG_FORMAT": "json"]).logFormat == .json)
        #expect(try fixture.load(fixture.json(extra: #", "logFormat": "json""#), flags: ["--log-format": ["text"]]).logFormat == .text)
        #expect(throws: ConfigurationError(field: "logFormat", "must be text or json, not 'syslog'")) {
            try fixture.load(fixture.json(extra: #", "logFormat": "syslog""#))
        }
    }

    @Test func everySettingHasItsOwnKeyFlagAndVariable() {
        let settings = ServeSetting.all
        #expect(Set(settings.map(\.key)).count == settings.count)
        #expect(Set(settings.map(\.flag)).count == settings.count)
        #expect(Set(settings.map(\.variable)).count == settings.count)
        #expect(settings.allSatisfy { $0.variable.hasPrefix("SOKUHO_") && $0.flag.hasPrefix("--") })
    }
}

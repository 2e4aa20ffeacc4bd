import Crypto
import DaemonConfiguration
import FCM
import Glibc
import Testing

/// Issue 23: an app's `android` member — Google's service-account download unchanged, kept as
/// private as a `.p8`, every mistake named by its field.
@Suite struct AndroidConfigurationTests {
    /// A service account in Google's layout, mode 0600, in the fixture's directory.
    static func serviceAccountFile(_ fixture: ServeConfigFixture, mode: mode_t = 0o600) throws -> String {
        let key = try RSASigningKey.generate()
        let account = try ServiceAccount(projectID: "eew-app-1a2b3", privateKeyID: "0123456789abcdef0123456789abcdef01234567",
                                         privateKeyPEM: key.pkcs8PEM, clientEmail: "sokuho@eew-app-1a2b3.iam.gserviceaccount.com",
                                         tokenURI: "https://oauth2.googleapis.com/token")
        let path = fixture.files.file("service-account.json", String(decoding: account.googleLayoutJSON(clientID: "100000000000000000001"), as: UTF8.self))
        chmod(path, mode)
        return path
    }

    @Test func anAndroidMemberIsReadWithItsDefaultsAndWrittenBackTheSame() throws {
        let fixture = try ServeConfigFixture()
        let file = try Self.serviceAccountFile(fixture)
        let config = try fixture.load(fixture.json(apps: [fixture.app(extra: #", "android": {"package": "com.example.quake", "serviceAccountFile": "\#(file)", "fcmHost": "127.0.0.1:9443"}"#)]))
        let android = try #require(config.apps[0].android)
        #expect(android.package == "com.example.quake" && android.serviceAccountFile == file)
        #expect(android.fcmHost?.description == "127.0.0.1:9443" && android.tokenHost == nil)
        #expect(android.connections == AndroidApp.defaultConnections && android.messagesPerMinute == 600_000)
        #expect(config.summary.contains("android     com.example.quake service account \(file)"))
        #expect(try fixture.load(config.json).apps[0].android == android, "the written configuration loads back as the same")
        #expect(try fixture.load(fixture.json()).apps[0].android == nil, "an app without the member is iOS only, as before")
    }

    static let invalid: [(String, String, String, String)] = [
        ("no package", #"{"serviceAccountFile": "@SA"}"#, "apps[0].android.package", "is required"),
        ("a bad package", #"{"package": "quake", "serviceAccountFile": "@SA"}"#, "apps[0].android.package", "not an Android application ID"),
        ("no service account", #"{"package": "com.example.quake"}"#, "apps[0].android.serviceAccountFile", "Generate new private key"),
        ("an unknown member", #"{"package": "com.example.quake", "serviceAccountFile": "@SA", "projectId": "x"}"#, "apps[0].android.projectId", ""),
        ("a zero quota", #"{"package": "com.example.quake", "serviceAccountFile": "@SA", "messagesPerMinute": 0}"#,
         "apps[0].android.messagesPerMinute", "from 1"),
        ("a missing file", #"{"package": "com.example.quake", "serviceAccountFile": "/nonexistent/sa.json"}"#,
         "apps[0].android.serviceAccountFile", "does not exist"),
    ]

    @Test(arguments: invalid)
    func aMistakeInTheAndroidMemberIsNamedByItsField(_ wrong: String, _ member: String, _ field: String, _ message: String) throws {
        let fixture = try ServeConfigFixture()
        let member = member.replacing("@SA", with: try Self.serviceAccountFile(fixture))
        let error = #expect(throws: ConfigurationError.self, "\(wrong)") {
            try fixture.load(fixture.json(apps: [fixture.app(extra: #", "android": \#(member)"#)]))
        }
        #expect(error?.field == field, "\(wrong): \(error?.description ?? "")")
        #expect(error?.message.contains(message) == true, "\(wrong): \(error?.description ?? "")")
    }

    @Test func aServiceAccountReadableByOthersIsRefusedAsAKeyIs() throws {
        let fixture = try ServeConfigFixture()
        let file = try Self.serviceAccountFile(fixture, mode: 0o644)
        let text = fixture.json(apps: [fixture.app(extra: #", "android": {"package": "com.example.quake", "serviceAccountFile": "\#(file)"}"#)])
        let error = #expect(throws: ConfigurationError.self) { try fixture.load(text) }
        #expect(error?.field == "apps[0].android.serviceAccountFile" && error?.message.contains("chmod 600 \(file)") == true)
        #expect(try fixture.load(text, flags: ["--allow-readable-key": [""]]).apps[0].android != nil)
        chmod(file, 0o600)
        #expect(try fixture.load(text).apps[0].android != nil)
    }

    @Test func aFileThatIsNotAServiceAccountIsRefusedNamingWhatItIs() throws {
        let fixture = try ServeConfigFixture()
        let file = fixture.files.file("google-services.json", #"{"project_info": {"project_id": "x"}, "client": []}"#)
        chmod(file, 0o600)
        let text = fixture.json(apps: [fixture.app(extra: #", "android": {"package": "com.example.quake", "serviceAccountFile": "\#(file)"}"#)])
        let error = #expect(throws: ConfigurationError.self) { try fixture.load(text) }
        #expect(error?.field == "apps[0].android.serviceAccountFile" && error?.message.contains("google-services.json") == true, "\(error?.description ?? "")")
    }
}

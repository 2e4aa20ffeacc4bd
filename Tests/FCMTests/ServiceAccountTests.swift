import FCM
import JSONCore
import Testing

/// Google's service-account download, read unchanged; every way it can be the wrong file refused
/// naming the member and the fix.
@Suite struct ServiceAccountTests {
    static let key = "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n-----END PRIVATE KEY-----\n"

    /// A download as Google writes it, members in Google's order (the key is a stand-in: this module
    /// checks its PEM label; Crypto checks the key).
    static func download(replacing replaced: [String: String?] = [:], extra: String = "") -> [UInt8] {
        let members: [(String, String)] = [
            ("type", "service_account"), ("project_id", "eew-app-1a2b3"), ("private_key_id", "0123456789abcdef0123456789abcdef01234567"),
            ("private_key", key), ("client_email", "firebase-adminsdk-x1y2z@eew-app-1a2b3.iam.gserviceaccount.com"),
            ("client_id", "104927389102938475610"), ("auth_uri", "https://accounts.google.com/o/oauth2/auth"),
            ("token_uri", "https://oauth2.googleapis.com/token"), ("auth_provider_x509_cert_url", "https://www.googleapis.com/oauth2/v1/certs"),
            ("client_x509_cert_url", "https://www.googleapis.com/robot/v1/metadata/x509/firebase-adminsdk-x1y2z%40eew-app-1a2b3.iam.gserviceaccount.com"),
            ("universe_domain", "googleapis.com"),
        ]
        var writer = JSONWriter()
        writer.beginObject()
        for (name, value) in members {
            if let replacement = replaced[name] {
                guard let replacement else { continue }
                writer.key(name); writer.string(replacement)
            } else {
                writer.key(name); writer.string(value)
            }
        }
        writer.endObject()
        var bytes = writer.bytes
        if !extra.isEmpty { bytes.removeLast(); bytes += Array(("," + extra + "}").utf8) }
        return bytes
    }

    @Test func googlesDownloadIsReadUnchanged() throws {
        let account = try ServiceAccount(json: Self.download())
        #expect(account.projectID == "eew-app-1a2b3")
        #expect(account.privateKeyID == "0123456789abcdef0123456789abcdef01234567")
        #expect(account.privateKeyPEM == Self.key)
        #expect(account.clientEmail == "firebase-adminsdk-x1y2z@eew-app-1a2b3.iam.gserviceaccount.com")
        #expect(account.tokenURI == "https://oauth2.googleapis.com/token")
        #expect(account.tokenEndpoint == HTTPSEndpoint(host: "oauth2.googleapis.com", port: 443, path: "/token"))
    }

    @Test func membersGoogleMayAddLaterAreAcceptedAndMembersItShipsMayBeAbsent() throws {
        let ignoredAbsent = Dictionary(uniqueKeysWithValues: ServiceAccount.ignoredMembers.map { ($0, String?.none) })
        #expect(try ServiceAccount(json: Self.download(replacing: ignoredAbsent)).projectID == "eew-app-1a2b3")
        #expect(try ServiceAccount(json: Self.download(extra: #""quota_project_id":"x","new_thing":{"a":1}"#)).projectID == "eew-app-1a2b3")
    }

    @Test("each required member, missing, is refused by its name", arguments: ["type", "project_id", "private_key_id", "private_key", "client_email", "token_uri"])
    func aMissingMemberIsNamed(_ member: String) {
        #expect(throws: ServiceAccountError(field: member, "is required")) { try ServiceAccount(json: Self.download(replacing: [member: .none])) }
    }

    @Test(arguments: [
        ("type", "authorized_user", "\"service_account\""),
        ("project_id", "Eew App", "not a Google Cloud project ID"),
        ("project_id", "a/b", "not a Google Cloud project ID"),
        ("private_key_id", "", "is empty"),
        ("private_key", "-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----\n", "PKCS#1"),
        ("private_key", "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC", "BEGIN PRIVATE KEY"),
        ("client_email", "firebase-adminsdk", "not an e-mail address"),
        ("token_uri", "http://oauth2.googleapis.com/token", "not an https URL"),
    ])
    func aWrongValueIsRefusedNamingItsMemberAndTheFix(member: String, value: String, says: String) {
        do {
            _ = try ServiceAccount(json: Self.download(replacing: [member: value]))
            Issue.record("\(member) = \(value) was accepted")
        } catch {
            #expect(error.field == member)
            #expect(error.message.contains(says), "\(error)")
            #expect(error.description.hasPrefix("service account \(member): "))
        }
    }

    @Test func theWrongFilesAreRefusedSayingWhichFileTheyAre() {
        let googleServices = Array(#"{"project_info":{"project_id":"eew-app-1a2b3"},"client":[]}"#.utf8)
        #expect(throws: ServiceAccountError.self) { try ServiceAccount(json: googleServices) }
        do { _ = try ServiceAccount(json: googleServices) } catch { #expect(error.message.contains("google-services.json")) }
        do { _ = try ServiceAccount(json: Array("not json".utf8)) } catch { #expect(error.field == "service account" && error.message.contains("not valid JSON")) }
        do { _ = try ServiceAccount(json: Array("[1]".utf8)) } catch { #expect(error.message.contains("must be a JSON object")) }
        do { _ = try ServiceAccount(json: Self.download(extra: #""project_id":"again""#)) } catch { #expect(error == ServiceAccountError(field: "project_id", "appears twice; give it once")) }
        do { _ = try ServiceAccount(json: Self.download(replacing: ["type": .none], extra: #""type":1"#)) } catch { #expect(error.field == "type" && error.message.contains("must be a string")) }
    }

    @Test func theLayoutTheSimulatorWritesIsGooglesAndReadsBack() throws {
        let account = try ServiceAccount(json: Self.download())
        let written = account.googleLayoutJSON(clientID: "104927389102938475610")
        #expect(written == Self.download() + [0x0a])
        #expect(try ServiceAccount(json: written) == account)
    }

    @Test(arguments: [
        ("https://oauth2.googleapis.com/token", HTTPSEndpoint(host: "oauth2.googleapis.com", port: 443, path: "/token")),
        ("https://127.0.0.1:8443/token", HTTPSEndpoint(host: "127.0.0.1", port: 8443, path: "/token")),
        ("https://[::1]:9/o/token", HTTPSEndpoint(host: "::1", port: 9, path: "/o/token")),
        ("https://example.com", HTTPSEndpoint(host: "example.com", port: 443, path: "/")),
    ])
    func tokenURIsAreTakenApartAndWrittenBack(text: String, endpoint: HTTPSEndpoint) {
        #expect(HTTPSEndpoint(text) == endpoint)
        #expect(HTTPSEndpoint(endpoint.description) == endpoint)
    }

    @Test(arguments: ["http://a/token", "https://", "https://u@a/token", "https://a/token?x=1", "https://a:0/t", "https://a:99999/t", "https://[::1/t", "https://a:b/t"])
    func anythingButAPlainHTTPSURLIsNotATokenURI(text: String) {
        #expect(HTTPSEndpoint(text) == nil)
    }
}

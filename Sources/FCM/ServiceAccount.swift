import JSONCore

/// An FCM service account: Google's service-account JSON download, read unchanged (FCM.md,
/// "Authentication"). Its RSA key signs the assertion that `token_uri` exchanges for an access
/// token; its project names the send path.
///
/// Members: `type` must be `service_account`; `project_id`, `private_key_id`, `private_key`
/// (PKCS#8 PEM, checked here by its label and by Crypto's `RSASigningKey` as a key),
/// `client_email` and `token_uri` (https) are required. The other members Google ships —
/// `client_id`, `auth_uri`, `auth_provider_x509_cert_url`, `client_x509_cert_url`,
/// `universe_domain` — are read as strings and ignored.
///
/// Members nobody knows are **accepted** and ignored, unlike the product's own files: this one is
/// written by Google and never edited by hand, so a typo is not the risk an unknown member
/// signals — Google extending the layout is (`universe_domain` arrived in 2023). Refusing them
/// would turn Google's next addition into a refused configuration on every reload. A repeated
/// member is still refused (`JSONObjectFields`), as no download has one.
public struct ServiceAccount: Sendable, Equatable {
    public static let type = "service_account"

    public let projectID: String
    /// The key's ID, the assertion's `kid`.
    public let privateKeyID: String
    /// The PEM text of the RSA key (PKCS#8, `BEGIN PRIVATE KEY`).
    public let privateKeyPEM: String
    /// The assertion's `iss`.
    public let clientEmail: String
    /// The assertion's `aud`, exactly as the file gives it (Google compares the text).
    public let tokenURI: String
    /// `tokenURI` taken apart: where the token request goes.
    public let tokenEndpoint: HTTPSEndpoint

    /// Checks each value as the file would give it.
    public init(projectID: String, privateKeyID: String, privateKeyPEM: String, clientEmail: String,
                tokenURI: String) throws(ServiceAccountError) {
        guard Self.isProjectID(projectID) else {
            throw ServiceAccountError(field: "project_id", "\"\(projectID)\" is not a Google Cloud project ID (lower-case letters, digits and hyphens, "
                                      + "e.g. my-app-1a2b3, as the Firebase console shows it); \(ServiceAccountError.download)")
        }
        guard !privateKeyID.isEmpty else { throw ServiceAccountError(field: "private_key_id", "is empty; \(ServiceAccountError.download)") }
        if privateKeyPEM.contains("-----BEGIN RSA PRIVATE KEY-----") {
            throw ServiceAccountError(field: "private_key", "is a PKCS#1 key (BEGIN RSA PRIVATE KEY); Google ships PKCS#8 (BEGIN PRIVATE KEY): "
                                      + "\(ServiceAccountError.download)")
        }
        guard privateKeyPEM.contains("-----BEGIN PRIVATE KEY-----"), privateKeyPEM.contains("-----END PRIVATE KEY-----") else {
            throw ServiceAccountError(field: "private_key", "holds no -----BEGIN PRIVATE KEY----- … -----END PRIVATE KEY----- block; "
                                      + ServiceAccountError.download)
        }
        let at = clientEmail.firstIndex(of: "@")
        guard let at, at != clientEmail.startIndex, clientEmail.index(after: at) != clientEmail.endIndex,
              !clientEmail.contains(where: \.isWhitespace) else {
            throw ServiceAccountError(field: "client_email", "\"\(clientEmail)\" is not an e-mail address (name@project.iam.gserviceaccount.com); "
                                      + ServiceAccountError.download)
        }
        guard let endpoint = HTTPSEndpoint(tokenURI) else {
            throw ServiceAccountError(field: "token_uri", "\"\(tokenURI)\" is not an https URL (Google's is https://oauth2.googleapis.com/token); "
                                      + ServiceAccountError.download)
        }
        self.projectID = projectID
        self.privateKeyID = privateKeyID
        self.privateKeyPEM = privateKeyPEM
        self.clientEmail = clientEmail
        self.tokenURI = tokenURI
        tokenEndpoint = endpoint
    }

    /// Parses the JSON file's bytes.
    public init(json bytes: [UInt8]) throws(ServiceAccountError) {
        let root = "service account"
        let value: JSONValue
        do { value = try JSONParser.parse(bytes) } catch { throw ServiceAccountError(field: root, "is not valid JSON: \(error)") }
        if value["project_info"] != nil {
            throw ServiceAccountError(field: root, "is google-services.json, the Android app's configuration; the sender needs the "
                                      + "service account's private key file instead: \(ServiceAccountError.download)")
        }
        var fields = try JSONObjectFields<ServiceAccountError>(value, path: "", root: root)
        let type = try fields.required("type", Self.text)
        guard type == Self.type else {
            throw ServiceAccountError(field: "type", "is \"\(type)\"; FCM needs a \"service_account\" key file, not a user or OAuth "
                                      + "client credential: \(ServiceAccountError.download)")
        }
        let projectID = try fields.required("project_id", Self.text)
        let privateKeyID = try fields.required("private_key_id", Self.text)
        let privateKey = try fields.required("private_key", Self.text)
        let clientEmail = try fields.required("client_email", Self.text)
        let tokenURI = try fields.required("token_uri", Self.text)
        for ignored in Self.ignoredMembers { _ = try fields.optional(ignored, Self.text) }
        // No rejectUnknown(): see the type's comment.
        try self.init(projectID: projectID, privateKeyID: privateKeyID, privateKeyPEM: privateKey, clientEmail: clientEmail, tokenURI: tokenURI)
    }

    /// The members Google ships that the sender does not use.
    public static let ignoredMembers = ["client_id", "auth_uri", "auth_provider_x509_cert_url", "client_x509_cert_url", "universe_domain"]

    /// A project ID as it appears in a send path: 1…100 bytes of lower-case letters, digits, `-`,
    /// and the `.`/`:` of legacy domain-scoped IDs (`example.com:my-app`); nothing a path must escape.
    public static func isProjectID(_ text: String) -> Bool {
        (1...100).contains(text.utf8.count) && text.utf8.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                 UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: ":"): true
            default: false
            }
        }
    }

    private static func text(_ value: JSONValue, _ field: String) throws(ServiceAccountError) -> String {
        guard let text = value.stringValue else { throw ServiceAccountError(field: field, "must be a string; \(ServiceAccountError.download)") }
        return text
    }
}

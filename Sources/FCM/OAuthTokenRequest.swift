/// The access-token request of a service account (RFC 7523 §2.1, FCM.md "Exchange"):
/// `POST token_uri` with `Content-Type: application/x-www-form-urlencoded` and
/// `grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=<JWT>`.
public enum OAuthTokenRequest {
    public static let grantType = "urn:ietf:params:oauth:grant-type:jwt-bearer"
    public static let contentType = "application/x-www-form-urlencoded"

    /// The form body for a signed assertion (a compact JWT).
    public static func body(assertion: String) -> [UInt8] {
        FormEncoding.encode([("grant_type", grantType), ("assertion", assertion)])
    }
}

import Crypto
import FCM
import JSONCore

/// Google's OAuth token endpoint for a service account (FCM.md, "Exchange"; RFC 7523), as a pure
/// check of one request: the form, the grant type, then the assertion — RS256 signature by the
/// account's key (`kid` its key ID), `iss` its e-mail, `aud` this endpoint's URI, the FCM scope,
/// and `iat`/`exp` at most an hour apart around now. Refusals are Google's OAuth error bodies
/// (`invalid_grant` with its description; `invalid_scope`, `unsupported_grant_type`,
/// `invalid_request`), all 400.
struct FCMTokenRules {
    let privateKeyID: String
    let clientEmail: String
    let tokenURI: String
    let key: RSAVerifyingKey
    /// How far ahead of the simulator's clock `iat` may be (Google allows a little skew).
    static let allowedSkew: Int64 = 60

    func check(contentType: String?, body: [UInt8], now: Int64) throws(OAuthRefusal) {
        guard contentType?.lowercased().hasPrefix(OAuthTokenRequest.contentType) == true else {
            throw OAuthRefusal("invalid_request", "Content-Type must be \(OAuthTokenRequest.contentType)")
        }
        guard let form = FormEncoding.decode(body) else { throw OAuthRefusal("invalid_request", "The request body is not a valid form.") }
        func value(_ name: String) -> String? { form.first { $0.name == name }?.value }
        guard let grantType = value("grant_type") else { throw OAuthRefusal("invalid_request", "Missing required parameter: grant_type") }
        guard grantType == OAuthTokenRequest.grantType else { throw OAuthRefusal("unsupported_grant_type", "Invalid grant_type: \(grantType)") }
        guard let assertion = value("assertion") else { throw OAuthRefusal("invalid_request", "Missing required parameter: assertion") }
        try checkAssertion(assertion, now: now)
    }

    private func checkAssertion(_ text: String, now: Int64) throws(OAuthRefusal) {
        let jwt: CompactJWT
        do { jwt = try CompactJWT(parsing: text) } catch { throw OAuthRefusal("invalid_grant", "Invalid JWT: \(error)") }
        guard let header = try? JSONParser.parse(jwt.header), let claims = try? JSONParser.parse(jwt.claims), header.isObject, claims.isObject else {
            throw OAuthRefusal("invalid_grant", "Invalid JWT: the header or claims are not JSON objects")
        }
        guard header["alg"]?.stringValue == "RS256" else { throw OAuthRefusal("invalid_grant", "Invalid JWT: alg must be RS256") }
        // A `kid` of another key, or none, is checked against this account's key anyway and fails
        // there: Google answers both with the signature message.
        guard header["kid"]?.stringValue == privateKeyID, key.isValidSignature(jwt.signature, of: jwt.signingInput) else {
            throw OAuthRefusal("invalid_grant", "Invalid JWT Signature.")
        }
        guard claims["iss"]?.stringValue == clientEmail else { throw OAuthRefusal("invalid_grant", "Invalid email or User ID") }
        guard claims["aud"]?.stringValue == tokenURI else {
            throw OAuthRefusal("invalid_grant", "Invalid JWT: Failed audience check. The right audience is \(tokenURI)")
        }
        let scopes = claims["scope"]?.stringValue?.split(separator: " ") ?? []
        guard scopes.contains(where: { $0 == ServiceAccount.messagingScope || $0 == "https://www.googleapis.com/auth/cloud-platform" }) else {
            throw OAuthRefusal("invalid_scope", "Invalid OAuth scope or ID token audience provided.")
        }
        guard let iat = claims["iat"]?.int64Value, let exp = claims["exp"]?.int64Value, iat < exp, exp - iat <= 3600,
              iat <= now + Self.allowedSkew, exp > now else {
            throw OAuthRefusal("invalid_grant", "Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe. "
                               + "Check your iat and exp values in the JWT claim.")
        }
    }
}

/// A refused token request: Google's OAuth error body, answered with 400.
struct OAuthRefusal: Error, Equatable {
    let body: OAuthErrorBody

    init(_ error: String, _ description: String) { body = OAuthErrorBody(error: error, errorDescription: description) }
}

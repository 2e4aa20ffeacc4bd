import JSONCore

/// The JWT a service account signs to get an access token (FCM.md, "Authentication"): header
/// `{"alg":"RS256","typ":"JWT","kid":private_key_id}`, claims `iss` client_email, `scope` FCM's,
/// `aud` token_uri, `iat`, `exp` at most an hour later. Bytes only: the RS256 signature and the
/// compact form are Crypto's (`CompactJWT.sign(header:claims:with:)` with an `RSASigningKey`
/// loaded from `privateKeyPEM`), so this module stays free of C and Crypto of FCM.
extension ServiceAccount {
    /// The one scope a sender needs.
    public static let messagingScope = "https://www.googleapis.com/auth/firebase.messaging"
    /// Google refuses an assertion whose `exp` is more than an hour after its `iat`.
    public static let maximumAssertionLifetime: Duration = .seconds(3600)

    /// The JOSE header, compact JSON.
    public var assertionHeader: [UInt8] {
        var writer = JSONWriter()
        writer.beginObject()
        writer.key("alg"); writer.string("RS256")
        writer.key("typ"); writer.string("JWT")
        writer.key("kid"); writer.string(privateKeyID)
        writer.endObject()
        return writer.bytes
    }

    /// The claims, compact JSON: issued at `issuedAt` (Unix seconds), expiring `lifetime` later
    /// (whole seconds, 1 s to an hour; Google's own libraries use the hour).
    public func assertionClaims(issuedAt: Int64, lifetime: Duration = maximumAssertionLifetime) throws(FCMValidationError) -> [UInt8] {
        let (seconds, fraction) = lifetime.components
        guard fraction == 0, seconds >= 1, lifetime <= Self.maximumAssertionLifetime else {
            throw FCMValidationError(field: "exp", "the assertion must expire 1 to 3600 whole seconds after iat, not \(lifetime)")
        }
        var writer = JSONWriter()
        writer.beginObject()
        writer.key("iss"); writer.string(clientEmail)
        writer.key("scope"); writer.string(Self.messagingScope)
        writer.key("aud"); writer.string(tokenURI)
        writer.key("iat"); writer.int(issuedAt)
        writer.key("exp"); writer.int(issuedAt + seconds)
        writer.endObject()
        return writer.bytes
    }
}

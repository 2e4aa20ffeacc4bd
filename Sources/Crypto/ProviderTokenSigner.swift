/// Makes APNs provider tokens: ES256 JWTs with header `{"alg":"ES256","kid":"<Key ID>"}` and claims
/// `{"iss":"<Team ID>","iat":<seconds>}` (APNS.md §5), signed with the raw 64-byte r||s.
///
/// The identifiers are checked once, here, so a typo fails at startup with a message rather than as
/// 403 `InvalidProviderToken` from APNs. Minting is deliberately separate from caching: use
/// `ProviderTokenSource`, never a token per request.
public struct ProviderTokenSigner: Sendable {
    public let key: SigningKey
    public let keyID: String
    public let teamID: String

    public init(key: SigningKey, keyID: String, teamID: String) throws(CryptoError) {
        guard Self.isAppleIdentifier(keyID) else { throw .invalidKeyID(keyID) }
        guard Self.isAppleIdentifier(teamID) else { throw .invalidTeamID(teamID) }
        self.key = key
        self.keyID = keyID
        self.teamID = teamID
    }

    /// A token issued at `issuedAt` (Unix seconds).
    public func token(issuedAt: Int64) throws(CryptoError) -> String {
        // Both identifiers are [A-Z0-9]{10}, so no JSON escaping is needed.
        let header = #"{"alg":"ES256","kid":"\#(keyID)"}"#
        let claims = #"{"iss":"\#(teamID)","iat":\#(issuedAt)}"#
        return try CompactJWT.sign(header: Array(header.utf8), claims: Array(claims.utf8), with: key)
    }

    /// Apple Key IDs and Team IDs: exactly 10 characters, uppercase ASCII letters and digits.
    public static func isAppleIdentifier(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        return bytes.count == 10 && bytes.allSatisfy {
            (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains($0) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0)
        }
    }
}

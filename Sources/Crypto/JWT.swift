/// A key that signs JWS signing input for its algorithm: `SigningKey` (ES256, APNs provider tokens)
/// and `RSASigningKey` (RS256, FCM service-account assertions). The compact form is written once,
/// in `CompactJWT.sign`; the header and claims come from whoever knows the protocol (APNs'
/// `ProviderTokenSigner`, FCM's `ServiceAccount.assertionHeader`/`assertionClaims`).
public protocol JWSSigningKey: Sendable {
    /// The signature of `message` in its JWS form (ES256: 64 bytes r||s; RS256: the modulus' length).
    func sign(_ message: [UInt8]) throws(CryptoError) -> [UInt8]
}

extension SigningKey: JWSSigningKey {}

/// A compact JWS (`base64url(header).base64url(claims).base64url(signature)`, RFC 7515 §7.1): the
/// form of an APNs provider token (ES256) and of an FCM service-account assertion (RS256).
public struct CompactJWT: Sendable, Equatable {
    /// The decoded header JSON.
    public let header: [UInt8]
    /// The decoded claims JSON.
    public let claims: [UInt8]
    /// The decoded signature (64 bytes r||s for ES256, 256 bytes for RS256 with a 2,048-bit key).
    public let signature: [UInt8]
    /// The ASCII bytes that were signed: the first two segments and the dot between them.
    public let signingInput: [UInt8]

    /// Why a string is not a compact JWS.
    public enum ParseFailure: Error, Equatable, Sendable, CustomStringConvertible {
        case wrongSegmentCount(Int)
        case notBase64URL(segment: String)

        public var description: String {
            switch self {
            case let .wrongSegmentCount(count): return "a JWT has 3 dot-separated segments, this one has \(count)"
            case let .notBase64URL(segment): return "the \(segment) segment is not unpadded base64url"
            }
        }
    }

    /// Splits and decodes `text`; the JSON inside is not interpreted here.
    public init(parsing text: String) throws(ParseFailure) {
        let segments = text.utf8.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard segments.count == 3 else { throw .wrongSegmentCount(segments.count) }
        guard let header = Base64URL.decode(Substring(segments[0])) else { throw .notBase64URL(segment: "header") }
        guard let claims = Base64URL.decode(Substring(segments[1])) else { throw .notBase64URL(segment: "claims") }
        guard let signature = Base64URL.decode(Substring(segments[2])) else { throw .notBase64URL(segment: "signature") }
        self.header = header
        self.claims = claims
        self.signature = signature
        signingInput = Array(segments[0]) + [UInt8(ascii: ".")] + Array(segments[1])
    }

    /// Signs `header` and `claims` (JSON bytes) with `key` and returns the compact token text.
    public static func sign(header: [UInt8], claims: [UInt8], with key: some JWSSigningKey) throws(CryptoError) -> String {
        let signingInput = Base64URL.encode(header) + "." + Base64URL.encode(claims)
        let signature = try key.sign(Array(signingInput.utf8))
        return signingInput + "." + Base64URL.encode(signature)
    }
}

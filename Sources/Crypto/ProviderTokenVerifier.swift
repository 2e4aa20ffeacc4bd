import JSONCore
import Vocabulary

/// Why a provider token was refused, precise enough for logs and tests; `apnsReason` is the reason
/// APNs gives for it (APNS.md, 403 table).
public enum ProviderTokenRejection: Error, Sendable, Equatable, CustomStringConvertible {
    /// No `authorization` header, an empty one, or `bearer` without a token.
    case missing
    /// Not `bearer <compact JWS>`, or the header/claims are not the JSON a provider token needs.
    case malformed(String)
    /// `alg` other than ES256.
    case unsupportedAlgorithm(String)
    /// A `kid` the verifier has no key for.
    case unknownKeyID(String)
    /// `iss` is not the team that owns the key.
    case wrongIssuer(expected: String, found: String)
    /// The signature is not 64 bytes r||s by the key named in `kid`.
    case badSignature
    /// `iat` is more than the maximum age (one hour) in the past.
    case expired(ageSeconds: Int64)
    /// `iat` is in the future by more than the allowed clock skew.
    case issuedInFuture(secondsAhead: Int64)

    /// The APNs `reason` for this rejection: MissingProviderToken, ExpiredProviderToken or InvalidProviderToken.
    public var apnsReason: String {
        switch self {
        case .missing: return "MissingProviderToken"
        case .expired: return "ExpiredProviderToken"
        default: return "InvalidProviderToken"
        }
    }

    public var description: String {
        switch self {
        case .missing: return "no provider token (authorization header missing or empty)"
        case let .malformed(detail): return "malformed provider token: \(detail)"
        case let .unsupportedAlgorithm(alg): return "provider token alg is \"\(alg)\"; APNs accepts only ES256"
        case let .unknownKeyID(kid): return "provider token kid \"\(kid)\" is not a known key"
        case let .wrongIssuer(expected, found): return "provider token iss is \"\(found)\"; key belongs to team \"\(expected)\""
        case .badSignature: return "provider token signature does not verify (ES256, 64-byte r||s)"
        case let .expired(age): return "provider token iat is \(age) s old; the limit is one hour"
        case let .issuedInFuture(ahead): return "provider token iat is \(ahead) s in the future"
        }
    }
}

/// What a verified token said.
public struct VerifiedProviderToken: Sendable, Equatable {
    public let keyID: String
    public let teamID: String
    public let issuedAt: Int64

    public init(keyID: String, teamID: String, issuedAt: Int64) {
        self.keyID = keyID
        self.teamID = teamID
        self.issuedAt = issuedAt
    }
}

/// Checks APNs provider tokens the way APNs does, for the simulator: `bearer` scheme, compact JWS,
/// `alg` ES256, a known `kid`, `iss` = the key's team, the ES256 signature, then `iat` age.
/// The signature is checked before the age, so an old token with a forged signature is "invalid",
/// not "expired".
///
/// Thread-safe. Tokens whose signature verified are remembered (by their exact text), so the
/// simulator pays for one ECDSA verification (≈ 1–2 ms) per token generation rather than per
/// request; only the `iat` age is checked again each time.
public final class ProviderTokenVerifier: Sendable {
    /// A key the verifier trusts and the team it belongs to.
    public struct TrustedKey: Sendable {
        public let keyID: String
        public let teamID: String
        public let key: VerifyingKey

        public init(keyID: String, teamID: String, key: VerifyingKey) {
            self.keyID = keyID
            self.teamID = teamID
            self.key = key
        }

        /// The key, key id and team of a signer, e.g. the test provider key the demo signs with.
        public init(signer: ProviderTokenSigner) {
            self.init(keyID: signer.keyID, teamID: signer.teamID, key: signer.key.verifyingKey)
        }
    }

    private let keys: [String: TrustedKey]
    private let maximumAge: Int64
    private let allowedClockSkew: Int64
    private let now: @Sendable () -> Int64
    /// Signature-verified tokens by their text; cleared when it reaches `verifiedCacheLimit`.
    private let verified = Lock<[String: VerifiedProviderToken]>([:])
    private static let verifiedCacheLimit = 256

    /// - Parameters:
    ///   - maximumAge: the oldest `iat` accepted, in seconds (APNs: one hour).
    ///   - allowedClockSkew: how far in the future `iat` may be, in seconds.
    public init(trusting keys: [TrustedKey], maximumAge: Int64 = 3600, allowedClockSkew: Int64 = 0,
                now: @escaping @Sendable () -> Int64 = WallClock.seconds) {
        self.keys = Dictionary(keys.map { ($0.keyID, $0) }, uniquingKeysWith: { _, last in last })
        self.maximumAge = maximumAge
        self.allowedClockSkew = allowedClockSkew
        self.now = now
    }

    /// Checks an `authorization` header value (`bearer <jwt>`; nil when the header is absent).
    public func verify(authorization: String?) throws(ProviderTokenRejection) -> VerifiedProviderToken {
        // APNs: MissingProviderToken when "the authorization header is missing or no provider token is specified".
        guard let authorization, !authorization.isEmpty else { throw .missing }
        let scheme = "bearer"
        guard authorization.prefix(scheme.count).lowercased() == scheme else {
            throw .malformed("the authorization header is not \"bearer <token>\"")
        }
        let rest = authorization.dropFirst(scheme.count)
        guard !rest.allSatisfy({ $0 == " " }) else { throw .missing }
        guard rest.first == " " else { throw .malformed("the authorization header is not \"bearer <token>\"") }
        return try verify(jwt: String(rest.dropFirst()))
    }

    /// Checks a bare JWT.
    public func verify(jwt text: String) throws(ProviderTokenRejection) -> VerifiedProviderToken {
        let token: VerifiedProviderToken
        if let remembered = verified.withLock({ $0[text] }) {
            token = remembered
        } else {
            token = try verifySignature(of: text)
        }
        let age = now() - token.issuedAt
        if age > maximumAge { throw .expired(ageSeconds: age) }
        if -age > allowedClockSkew { throw .issuedInFuture(secondsAhead: -age) }
        return token
    }

    /// Everything but the age: structure, header, issuer and signature; remembers a valid token.
    private func verifySignature(of text: String) throws(ProviderTokenRejection) -> VerifiedProviderToken {
        let jwt: CompactJWT
        do throws(CompactJWT.ParseFailure) {
            jwt = try CompactJWT(parsing: text)
        } catch {
            throw .malformed(error.description)
        }
        let header = try Self.object(jwt.header, named: "header")
        let claims = try Self.object(jwt.claims, named: "claims")

        guard let alg = header["alg"]?.stringValue else { throw .malformed("the header has no string \"alg\"") }
        guard alg == "ES256" else { throw .unsupportedAlgorithm(alg) }
        guard let kid = header["kid"]?.stringValue else { throw .malformed("the header has no string \"kid\"") }
        guard let trusted = keys[kid] else { throw .unknownKeyID(kid) }
        guard let iss = claims["iss"]?.stringValue else { throw .malformed("the claims have no string \"iss\"") }
        guard let iat = claims["iat"]?.int64Value else { throw .malformed("the claims have no integer \"iat\"") }
        guard iss == trusted.teamID else { throw .wrongIssuer(expected: trusted.teamID, found: iss) }
        guard trusted.key.isValidSignature(jwt.signature, of: jwt.signingInput) else { throw .badSignature }

        let token = VerifiedProviderToken(keyID: kid, teamID: iss, issuedAt: iat)
        verified.withLock { cache in
            if cache.count >= Self.verifiedCacheLimit { cache.removeAll(keepingCapacity: true) }
            cache[text] = token
        }
        return token
    }

    private static func object(_ bytes: [UInt8], named name: String) throws(ProviderTokenRejection) -> JSONValue {
        let value: JSONValue
        do throws(JSONParser.Error) {
            value = try JSONParser.parse(bytes)
        } catch {
            throw .malformed("the \(name) is not JSON: \(error)")
        }
        guard value.isObject else { throw .malformed("the \(name) is not a JSON object") }
        return value
    }
}

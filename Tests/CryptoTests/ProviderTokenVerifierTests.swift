import Crypto
import Testing

/// The simulator's token check: what APNs accepts it accepts, what APNs refuses it refuses with the
/// same reason.
@Suite struct ProviderTokenVerifierTests {
    private let clock = ManualClock()
    private let signer: ProviderTokenSigner

    init() throws {
        signer = try ProviderTokenSigner(key: SigningKey(contentsOf: Fixtures.appleLayoutKey), keyID: Fixtures.keyID, teamID: Fixtures.teamID)
    }

    private func verifier(clockSkew: Int64 = 0) throws -> ProviderTokenVerifier {
        let publicKey = try VerifyingKey(pem: Array(TemporaryDirectory().readText(Fixtures.appleLayoutPublicKey).utf8), source: "fixture")
        return ProviderTokenVerifier(trusting: [.init(keyID: Fixtures.keyID, teamID: Fixtures.teamID, key: publicKey)],
                                     allowedClockSkew: clockSkew, now: clock.closure)
    }

    /// Re-encodes a token with other header/claims JSON, keeping the original signature.
    private func replacing(_ token: String, header: String? = nil, claims: String? = nil, signature: [UInt8]? = nil) throws -> String {
        let jwt = try CompactJWT(parsing: token)
        return Base64URL.encode(header.map { Array($0.utf8) } ?? jwt.header) + "."
            + Base64URL.encode(claims.map { Array($0.utf8) } ?? jwt.claims) + "."
            + Base64URL.encode(signature ?? jwt.signature)
    }

    @Test func acceptsOurTokenInTheAuthorizationHeader() throws {
        let token = try signer.token(issuedAt: clock.now)
        let verified = try verifier().verify(authorization: "bearer " + token)
        #expect(verified == VerifiedProviderToken(keyID: Fixtures.keyID, teamID: Fixtures.teamID, issuedAt: clock.now))
    }

    @Test func acceptsATokenSignedByPythonCryptography() throws {
        let dir = TemporaryDirectory()
        let script = dir.write(PythonJWT.signer, to: "sign.py")
        let result = Subprocess.run(["python3", script, Fixtures.appleLayoutKey, Fixtures.keyID, Fixtures.teamID, String(clock.now)], in: dir)
        #expect(result.succeeded, "\(result.standardError)")
        let token = String(result.standardOutput.dropLast())
        #expect(try verifier().verify(jwt: token).issuedAt == clock.now)
    }

    @Test func refusesTamperedClaimsAndSignature() throws {
        let token = try signer.token(issuedAt: clock.now)
        let verifier = try verifier()
        // The genuine token first, so its verified signature is remembered: it must not vouch for others.
        #expect(try verifier.verify(jwt: token).issuedAt == clock.now)
        let laterIat = try replacing(token, claims: #"{"iss":"TEAM123456","iat":\#(clock.now + 1)}"#)
        #expect(throws: ProviderTokenRejection.badSignature) { try verifier.verify(jwt: laterIat) }

        var signature = try CompactJWT(parsing: token).signature
        signature[10] ^= 0x01
        #expect(throws: ProviderTokenRejection.badSignature) { try verifier.verify(jwt: try replacing(token, signature: signature)) }
        // A DER signature (what `openssl dgst -sign` makes) is not the JWS form.
        let der = ProviderTokenSignerTests.derSignature(raw: try CompactJWT(parsing: token).signature)
        #expect(throws: ProviderTokenRejection.badSignature) { try verifier.verify(jwt: try replacing(token, signature: der)) }
        // A token by another key under the same key id.
        let impostor = try ProviderTokenSigner(key: SigningKey.generate(), keyID: Fixtures.keyID, teamID: Fixtures.teamID)
        #expect(throws: ProviderTokenRejection.badSignature) { try verifier.verify(jwt: try impostor.token(issuedAt: clock.now)) }
    }

    @Test func headerAndIssuerChecksNameTheOffendingValue() throws {
        let token = try signer.token(issuedAt: clock.now)
        let verifier = try verifier()
        #expect(throws: ProviderTokenRejection.unsupportedAlgorithm("HS256")) {
            try verifier.verify(jwt: try replacing(token, header: #"{"alg":"HS256","kid":"TESTKEY001"}"#))
        }
        #expect(throws: ProviderTokenRejection.unknownKeyID("OTHERKEY01")) {
            try verifier.verify(jwt: try replacing(token, header: #"{"alg":"ES256","kid":"OTHERKEY01"}"#))
        }
        #expect(throws: ProviderTokenRejection.wrongIssuer(expected: Fixtures.teamID, found: "OTHERTEAM1")) {
            try verifier.verify(jwt: try replacing(token, claims: #"{"iss":"OTHERTEAM1","iat":\#(clock.now)}"#))
        }
    }

    @Test func iatAgeLimitsAtTheOneHourEdgeAndInTheFuture() throws {
        let verifier = try verifier(clockSkew: 5)
        let issued = clock.now
        let token = try signer.token(issuedAt: issued)
        clock.set(issued + 3600)
        #expect(try verifier.verify(jwt: token).issuedAt == issued)
        clock.set(issued + 3601)
        #expect(throws: ProviderTokenRejection.expired(ageSeconds: 3601)) { try verifier.verify(jwt: token) }
        clock.set(issued - 5)
        #expect(try verifier.verify(jwt: token).issuedAt == issued)
        clock.set(issued - 6)
        #expect(throws: ProviderTokenRejection.issuedInFuture(secondsAhead: 6)) { try verifier.verify(jwt: token) }
    }

    @Test func anExpiredForgeryIsInvalidNotExpired() throws {
        let verifier = try verifier()
        let old = try signer.token(issuedAt: clock.now - 7200)
        #expect(throws: ProviderTokenRejection.expired(ageSeconds: 7200)) { try verifier.verify(jwt: old) }
        var signature = try CompactJWT(parsing: old).signature
        signature[40] ^= 0x80
        #expect(throws: ProviderTokenRejection.badSignature) { try verifier.verify(jwt: try replacing(old, signature: signature)) }
    }

    @Test(arguments: [
        (nil, "MissingProviderToken"),
        ("", "MissingProviderToken"),
        ("Basic dXNlcjpwYXNz", "InvalidProviderToken"),
        ("bearer ", "MissingProviderToken"),
        ("bearerabc.def.ghi", "InvalidProviderToken"),
        ("bearer abc.def", "InvalidProviderToken"),
        ("bearer a=.b.c", "InvalidProviderToken"),
        ("bearer e30.e30.", "InvalidProviderToken"),
    ] as [(String?, String)])
    func missingAndMalformedHeadersMapToAPNsReasons(authorization: String?, reason: String) throws {
        do {
            _ = try verifier().verify(authorization: authorization)
            Issue.record("accepted \(authorization ?? "nil")")
        } catch let rejection as ProviderTokenRejection {
            #expect(rejection.apnsReason == reason, "\(rejection)")
        }
    }

    @Test func claimsThatAreNotTheRightJSONAreMalformed() throws {
        let token = try signer.token(issuedAt: clock.now)
        let verifier = try verifier()
        for claims in [#"{"iss":"TEAM123456","iat":"1800000000"}"#, #"{"iss":"TEAM123456"}"#, "[1]", "{"] {
            do {
                _ = try verifier.verify(jwt: try replacing(token, claims: claims))
                Issue.record("accepted claims \(claims)")
            } catch let rejection as ProviderTokenRejection {
                guard case .malformed = rejection else {
                    Issue.record("claims \(claims): \(rejection)")
                    continue
                }
            }
        }
    }

    @Test func uppercaseBearerSchemeIsAccepted() throws {
        let token = try signer.token(issuedAt: clock.now)
        #expect(try verifier().verify(authorization: "Bearer " + token).keyID == Fixtures.keyID)
    }

    @Test func verifyingKeyLoadsFromThePublicPEMOrThePrivateP8Alike() throws {
        let expected = TemporaryDirectory().readText(Fixtures.appleLayoutPublicKey)
        #expect(signer.key.verifyingKey.pem == expected)
        #expect(try VerifyingKey(contentsOf: Fixtures.appleLayoutPublicKey).pem == expected)
        #expect(try VerifyingKey(contentsOf: Fixtures.appleLayoutKey).pem == expected)
        let missing = TemporaryDirectory().path("nope.pem")
        #expect(throws: CryptoError.publicKeyUnrecognized(source: missing, detail: "there is no such file")) {
            try VerifyingKey(contentsOf: missing)
        }
        #expect(throws: CryptoError.self) { try VerifyingKey(pem: Array("nope".utf8), source: "x") }
    }

    @Test func trustedKeyFromASignerAcceptsThatSignersTokens() throws {
        let generated = try ProviderTokenSigner(key: SigningKey.generate(), keyID: "GENKEY0001", teamID: "GENTEAM001")
        let verifier = ProviderTokenVerifier(trusting: [.init(signer: generated)], now: clock.closure)
        #expect(try verifier.verify(jwt: generated.token(issuedAt: clock.now)).teamID == "GENTEAM001")
        #expect(throws: ProviderTokenRejection.unknownKeyID(Fixtures.keyID)) { try verifier.verify(jwt: try signer.token(issuedAt: clock.now)) }
    }
}

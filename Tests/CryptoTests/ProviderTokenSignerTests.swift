import Crypto
import Testing

/// ES256 provider tokens as APNs reads them, checked by implementations that are not ours.
@Suite struct ProviderTokenSignerTests {
    private func signer() throws -> ProviderTokenSigner {
        try ProviderTokenSigner(key: SigningKey(contentsOf: Fixtures.appleLayoutKey), keyID: Fixtures.keyID, teamID: Fixtures.teamID)
    }

    @Test func tokenHasAppleHeaderAndClaimsUnpaddedBase64URLAndRaw64ByteSignature() throws {
        let token = try signer().token(issuedAt: 1_700_000_123)
        let jwt = try CompactJWT(parsing: token)
        #expect(String(decoding: jwt.header, as: UTF8.self) == #"{"alg":"ES256","kid":"TESTKEY001"}"#)
        #expect(String(decoding: jwt.claims, as: UTF8.self) == #"{"iss":"TEAM123456","iat":1700000123}"#)
        #expect(jwt.signature.count == 64)
        #expect(!token.contains("=") && !token.contains("+") && !token.contains("/"))
    }

    /// The provider token for the fixture key, kid TESTKEY001, iss TEAM123456, iat 1_800_000_000.
    /// Derived from this implementation and confirmed independently with python-ecdsa 0.19.2, which
    /// implements RFC 6979 on its own (no OpenSSL, no mbedTLS):
    ///   key = ecdsa.SigningKey.from_pem(open("AuthKey_TESTKEY001.test.p8").read())
    ///   sig = key.sign_deterministic((h + "." + c).encode(), hashfunc=hashlib.sha256, sigencode=sigencode_string)
    /// with h and c the unpadded base64url of the header and claims below; it printed this exact string.
    static let goldenJWT = "eyJhbGciOiJFUzI1NiIsImtpZCI6IlRFU1RLRVkwMDEifQ"
        + ".eyJpc3MiOiJURUFNMTIzNDU2IiwiaWF0IjoxODAwMDAwMDAwfQ"
        + ".7HsgDRcPOXHgbXISaVgA3K4u4Wa4mdj_xKan23yVXwCPcV2qQL01wXDf_hZlrdkaSAAh0Fq4DDXF7bjjKzFfCg"

    @Test("The fixture key signs the pinned golden provider token byte for byte, so every process and version agrees on it")
    func goldenVector() throws {
        let token = try signer().token(issuedAt: 1_800_000_000)
        #expect(token == Self.goldenJWT)
        let jwt = try CompactJWT(parsing: token)
        #expect(String(decoding: jwt.header, as: UTF8.self) == #"{"alg":"ES256","kid":"TESTKEY001"}"#)
        #expect(String(decoding: jwt.claims, as: UTF8.self) == #"{"iss":"TEAM123456","iat":1800000000}"#)
    }

    @Test("Signing the same key, kid, iss and iat twice, even through separately loaded keys, gives identical JWTs")
    func signingIsDeterministic() throws {
        let a = try signer(), b = try signer()
        for iat in [Int64(0), 1_700_000_000, 1_800_001_800] {
            #expect(try a.token(issuedAt: iat) == a.token(issuedAt: iat))
            #expect(try a.token(issuedAt: iat) == b.token(issuedAt: iat))
        }
        #expect(try a.token(issuedAt: 1) != a.token(issuedAt: 2))
    }

    @Test func pythonCryptographyVerifiesOurTokens() throws {
        let dir = TemporaryDirectory()
        let script = dir.write(PythonJWT.verifier, to: "verify.py")
        let signer = try signer()
        // Ordinary tokens, plus one whose r or s has a leading zero byte (about 1 signature in 128):
        // it must still be left-padded to 32 bytes, which a naive big-integer export gets wrong.
        var tokens = try (Int64(1_700_000_000)..<1_700_000_003).map { ($0, try signer.token(issuedAt: $0)) }
        for iat in Int64(1_700_001_000)..<1_700_003_000 {
            let token = try signer.token(issuedAt: iat)
            let signature = try CompactJWT(parsing: token).signature
            if signature[0] == 0 || signature[32] == 0 { tokens.append((iat, token)); break }
        }
        #expect(tokens.count == 4, "no signature with a leading zero byte in 2000 tries")
        for (iat, token) in tokens {
            let result = Subprocess.run(["python3", script, token, Fixtures.appleLayoutPublicKey], in: dir)
            #expect(result.succeeded, "python refused \(token): \(result.standardError)")
            #expect(result.standardOutput == "{\"alg\":\"ES256\",\"kid\":\"TESTKEY001\"}\n{\"iss\":\"TEAM123456\",\"iat\":\(iat)}\n")
        }
    }

    @Test func opensslVerifiesOurSignatureConvertedToDER() throws {
        let dir = TemporaryDirectory()
        let token = try signer().token(issuedAt: 1_700_000_000)
        let jwt = try CompactJWT(parsing: token)
        let input = dir.write(String(decoding: jwt.signingInput, as: UTF8.self), to: "input")
        let der = Self.derSignature(raw: jwt.signature)
        let signature = dir.write(bytes: der, to: "signature.der")
        let verify = ["openssl", "dgst", "-sha256", "-verify", Fixtures.appleLayoutPublicKey, "-signature", signature, input]
        let verified = Subprocess.run(verify, in: dir)
        #expect(verified.standardOutput == "Verified OK\n", "\(verified.standardError)")

        var tampered = der
        tampered[tampered.count - 1] ^= 1
        _ = dir.write(bytes: tampered, to: "signature.der")
        #expect(Subprocess.run(verify, in: dir).standardOutput != "Verified OK\n")
    }

    @Test(arguments: ["", "TESTKEY01", "TESTKEY0012", "testkey001", "TESTKEY-01", "TESTKÉY001"])
    func malformedKeyIDIsRefusedAtStartup(keyID: String) throws {
        let key = try SigningKey.generate()
        #expect(throws: CryptoError.invalidKeyID(keyID)) { try ProviderTokenSigner(key: key, keyID: keyID, teamID: Fixtures.teamID) }
        #expect(throws: CryptoError.invalidTeamID(keyID)) { try ProviderTokenSigner(key: key, keyID: Fixtures.keyID, teamID: keyID) }
        #expect(CryptoError.invalidTeamID(keyID).description.contains("10-character Team ID"))
    }

    /// ECDSA-Sig-Value ::= SEQUENCE { r INTEGER, s INTEGER } from the JWS r||s form.
    static func derSignature(raw: [UInt8]) -> [UInt8] {
        func integer(_ bytes: ArraySlice<UInt8>) -> [UInt8] {
            var value = Array(bytes.drop { $0 == 0 })
            if value.isEmpty || value[0] & 0x80 != 0 { value.insert(0, at: 0) }
            return [0x02, UInt8(value.count)] + value
        }
        let body = integer(raw[0..<32]) + integer(raw[32..<64])
        return [0x30, UInt8(body.count)] + body
    }
}
